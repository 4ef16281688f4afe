// NCCL errors as the project's Status, as cuda_status.h does for the CUDA runtime: a failure
// carries the call it came from and NCCL's own error string.
#pragma once

#include <nccl.h>

#include <string_view>

#include "core/status.h"

namespace se::cuda {

// Ok for ncclSuccess; otherwise "<what>: <ncclGetErrorString> (<ncclGetLastError>)",
// kInvalidArgument for a misuse NCCL names (ncclInvalidArgument, ncclInvalidUsage) and kInternal
// for everything else.
Status nccl_status(ncclResult_t result, std::string_view what);

}  // namespace se::cuda

// Returns the Status of an NCCL call from the enclosing function when it failed.
#define SE_NCCL_RETURN_IF_ERROR(call) SE_RETURN_IF_ERROR(::se::cuda::nccl_status((call), #call))
