// cuBLAS errors as the project's Status, as cuda_status does for the runtime: a failure carries
// the call it came from and cuBLAS's own status name.
#pragma once

#include <cublas_api.h>

#include <string_view>

#include "core/status.h"

namespace se::cuda {

// Ok for CUBLAS_STATUS_SUCCESS; otherwise "<what>: <status name>: <status string>", with
// kResourceExhausted for an allocation failure, kUnsupported for an operation this GPU or library
// cannot run, and kInternal for everything else (a bad value reaching cuBLAS is our bug: the
// callers check their arguments first).
Status cublas_status(cublasStatus_t status, std::string_view what);

}  // namespace se::cuda

// Returns the Status of a cuBLAS(Lt) call from the enclosing function when it failed.
#define SE_CUBLAS_RETURN_IF_ERROR(call) SE_RETURN_IF_ERROR(::se::cuda::cublas_status((call), #call))
