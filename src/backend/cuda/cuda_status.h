// CUDA runtime errors as the project's Status: every CUDA call is checked, and a failure carries
// the call it came from and CUDA's own error string.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "core/status.h"

namespace se::cuda {

// Ok for cudaSuccess; otherwise "<what>: <cudaGetErrorName>: <cudaGetErrorString>", with
// kResourceExhausted for out-of-memory and kInternal for everything else. Clears the thread's
// last-error state, so the next launch_status does not report this error again.
Status cuda_status(cudaError_t error, std::string_view what);

// The status of the last kernel launch on this thread (bad launch configuration, no device, a
// missing kernel image for this GPU). Reading it clears it, as cudaGetLastError does.
Status launch_status(std::string_view kernel);

}  // namespace se::cuda

// Returns the Status of a CUDA runtime call from the enclosing function when it failed.
#define SE_CUDA_RETURN_IF_ERROR(call) SE_RETURN_IF_ERROR(::se::cuda::cuda_status((call), #call))
