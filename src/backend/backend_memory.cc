#include "backend/backend_memory.h"

#include <cstring>

#include "core/host_buffer.h"

namespace se {

Expected<BackendBuffer> BackendMemory::allocate(size_t bytes) {
    SE_ASSIGN_OR_RETURN(HostBuffer buffer, HostBuffer::allocate(bytes));
    auto owner = std::make_shared<HostBuffer>(std::move(buffer));
    void* data = owner->data();
    return BackendBuffer(std::move(owner), data, bytes);
}

Expected<BackendBuffer> BackendMemory::allocate_host(size_t bytes) {
    return BackendMemory::allocate(bytes);
}

Status BackendMemory::copy_from_host(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return {};
}

Status BackendMemory::copy_to_host(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return {};
}

}  // namespace se
