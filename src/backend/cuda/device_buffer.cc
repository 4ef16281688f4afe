#include "backend/cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {

DeviceBuffer::~DeviceBuffer() {
    release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        num_bytes_ = std::exchange(other.num_bytes_, 0);
    }
    return *this;
}

Expected<DeviceBuffer> DeviceBuffer::allocate(size_t num_bytes) {
    if (num_bytes == 0) return DeviceBuffer();
    void* data = nullptr;
    const Status status = cuda_status(cudaMalloc(&data, num_bytes),
                                      "cudaMalloc of " + std::to_string(num_bytes) + " bytes");
    if (!status.ok()) return status;
    return DeviceBuffer(data, num_bytes);
}

void DeviceBuffer::release() {
    // A destructor has no one to report to; cudaFree fails only when the context is already
    // broken, and an earlier call has reported that.
    if (data_ != nullptr) static_cast<void>(cudaFree(data_));
    data_ = nullptr;
    num_bytes_ = 0;
}

}  // namespace se::cuda
