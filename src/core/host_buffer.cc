#include "core/host_buffer.h"

#include <sys/mman.h>

#include <cstring>
#include <string>

namespace se {
namespace {

constexpr size_t kAlign = 64;
// Above this size memory comes from mmap: zero pages arrive lazily instead of being written up
// front, so a large KV arena costs nothing until it is used.
constexpr size_t kMmapThreshold = size_t{1} << 20;

}  // namespace

uint8_t* HostBuffer::allocate_zeroed(size_t bytes) {
    if (bytes >= kMmapThreshold) {
        void* p =
            ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    }
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, rounded));
    if (p != nullptr) std::memset(p, 0, rounded);
    return p;
}

void HostBuffer::Free::operator()(uint8_t* p) const {
    if (bytes >= kMmapThreshold) {
        ::munmap(p, bytes);
    } else {
        std::free(p);
    }
}

HostBuffer::HostBuffer(size_t bytes) : data_(allocate_zeroed(bytes), Free{bytes}), size_(bytes) {
    SE_CHECK(bytes == 0 || data_ != nullptr, "host allocation of %zu bytes failed", bytes);
}

Expected<HostBuffer> HostBuffer::allocate(size_t bytes) {
    HostBuffer buffer;
    if (bytes == 0) return buffer;
    buffer.data_ = std::unique_ptr<uint8_t[], Free>(allocate_zeroed(bytes), Free{bytes});
    if (buffer.data_ == nullptr) {
        return resource_exhausted("cannot allocate " + std::to_string(bytes) +
                                  " bytes of host memory");
    }
    buffer.size_ = bytes;
    return buffer;
}

}  // namespace se
