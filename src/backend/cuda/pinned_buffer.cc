#include "backend/cuda/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <utility>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {

PinnedBuffer::~PinnedBuffer() {
    release();
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        num_bytes_ = std::exchange(other.num_bytes_, 0);
    }
    return *this;
}

Expected<PinnedBuffer> PinnedBuffer::allocate(size_t num_bytes) {
    if (num_bytes == 0) return PinnedBuffer();
    void* data = nullptr;
    SE_CUDA_RETURN_IF_ERROR(cudaMallocHost(&data, num_bytes));
    std::memset(data, 0, num_bytes);
    return PinnedBuffer(data, num_bytes);
}

void PinnedBuffer::release() {
    if (data_ != nullptr) static_cast<void>(cudaFreeHost(data_));
    data_ = nullptr;
    num_bytes_ = 0;
}

}  // namespace se::cuda
