#include "backend/cuda/cuda_status.h"

#include <string>

namespace se::cuda {

Status cuda_status(cudaError_t error, std::string_view what) {
    if (error == cudaSuccess) return Status::ok_status();
    // The runtime also keeps this error as the thread's last error; reported here, it must not
    // surface again as the status of the next kernel launch (launch_status). A sticky error (a
    // broken context) comes back from every later call anyway.
    static_cast<void>(cudaGetLastError());
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
