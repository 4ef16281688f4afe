// DeviceBuffer: one cudaMalloc'd allocation, freed by its destructor; move-only.
#pragma once

#include <cstddef>

#include "core/expected.h"

namespace se::cuda {

class DeviceBuffer {
  public:
    DeviceBuffer() = default;  // empty: data() is null, size 0
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // Device memory of `num_bytes` bytes (256-byte aligned, contents undefined). Out of device
    // memory is kResourceExhausted; 0 bytes gives an empty buffer.
    static Expected<DeviceBuffer> allocate(size_t num_bytes);

    void* data() const { return data_; }
    size_t size_bytes() const { return num_bytes_; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data_);
    }

  private:
    DeviceBuffer(void* data, size_t num_bytes) : data_(data), num_bytes_(num_bytes) {}
    void release();

    void* data_ = nullptr;
    size_t num_bytes_ = 0;
};

}  // namespace se::cuda
