#include "backend/cuda/cuda_status.h"

#include <string>

namespace se::cuda {

Status cuda_status(cudaError_t error, std::string_view what) {
    if (error == cudaSuccess) return Status::ok_status();
    std::string message(what);
    message += ": ";
    message += cudaGetErrorName(error);
    message += ": ";
    message += cudaGetErrorString(error);
    const StatusCode code =
        error == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal;
    return {code, std::move(message)};
}

Status launch_status(std::string_view kernel) {
    return cuda_status(cudaGetLastError(), kernel);
}

}  // namespace se::cuda
