#include "backend/cuda/stream.h"

#include <utility>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {

CudaStream::~CudaStream() {
    release();
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
    if (this != &other) {
        release();
        stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
}

Expected<CudaStream> CudaStream::create() {
    cudaStream_t stream = nullptr;
    SE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return CudaStream(stream);
}

Status CudaStream::synchronize() const {
    return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaStream::release() {
    if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
    stream_ = nullptr;
}

}  // namespace se::cuda
