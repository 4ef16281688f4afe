// PinnedBuffer: page-locked host memory (cudaMallocHost), freed by its destructor; move-only.
// Copies between it and the device run asynchronously at full PCIe speed.
#pragma once

#include <cstddef>

#include "core/expected.h"

namespace se::cuda {

class PinnedBuffer {
  public:
    PinnedBuffer() = default;
    ~PinnedBuffer();
    PinnedBuffer(PinnedBuffer&& other) noexcept;
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    // Zeroed page-locked memory; kResourceExhausted when the host cannot lock that much.
    static Expected<PinnedBuffer> allocate(size_t num_bytes);

    void* data() const { return data_; }
    size_t size_bytes() const { return num_bytes_; }

  private:
    PinnedBuffer(void* data, size_t num_bytes) : data_(data), num_bytes_(num_bytes) {}
    void release();

    void* data_ = nullptr;
    size_t num_bytes_ = 0;
};

}  // namespace se::cuda
