#include "backend/cuda/nccl_status.h"

#include <string>

namespace se::cuda {

Status nccl_status(ncclResult_t result, std::string_view what) {
    if (result == ncclSuccess) return Status::ok_status();
    std::string message(what);
    message += ": ";
    message += ncclGetErrorString(result);
    // NCCL's last warning of this thread names the detail (a duplicate GPU, a failed transport).
    const char* detail = ncclGetLastError(nullptr);
    if (detail != nullptr && detail[0] != '\0') {
        message += " (";
        message += detail;
        message += ")";
    }
    const bool misuse = result == ncclInvalidArgument || result == ncclInvalidUsage;
    return {misuse ? StatusCode::kInvalidArgument : StatusCode::kInternal, std::move(message)};
}

}  // namespace se::cuda
