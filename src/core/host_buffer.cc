#include "core/host_buffer.h"

#include <cstring>
#include <string>

namespace se {
namespace {

constexpr size_t kAlign = 64;

uint8_t* aligned_zeroed(size_t bytes) {
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, rounded));
    if (p != nullptr)
        std::memset(p, 0, rounded);
    return p;
}

}  // namespace

HostBuffer::HostBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0)
        return;
    data_.reset(aligned_zeroed(bytes));
    SE_CHECK(data_ != nullptr, "host allocation of %zu bytes failed", bytes);
}

Expected<HostBuffer> HostBuffer::allocate(size_t bytes) {
    HostBuffer buffer;
    if (bytes == 0)
        return buffer;
    buffer.data_.reset(aligned_zeroed(bytes));
    if (buffer.data_ == nullptr) {
        return resource_exhausted("cannot allocate " + std::to_string(bytes) +
                                  " bytes of host memory");
    }
    buffer.size_ = bytes;
    return buffer;
}

}  // namespace se
