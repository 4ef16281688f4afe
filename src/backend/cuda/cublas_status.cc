#include "backend/cuda/cublas_status.h"

#include <cublasLt.h>

#include <string>

namespace se::cuda {

Status cublas_status(cublasStatus_t status, std::string_view what) {
    if (status == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
    std::string message(what);
    message += ": ";
    message += cublasLtGetStatusName(status);
    message += ": ";
    message += cublasLtGetStatusString(status);
    StatusCode code = StatusCode::kInternal;
    if (status == CUBLAS_STATUS_ALLOC_FAILED) code = StatusCode::kResourceExhausted;
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
        code = StatusCode::kUnsupported;
    }
    return {code, std::move(message)};
}

}  // namespace se::cuda
