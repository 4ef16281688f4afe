#include "backend/cpu/scratch.h"

#include <algorithm>

#include "core/check.h"

namespace se::cpu {

Scratch::Scratch(int32_t num_threads)
    : num_threads_(num_threads),
      thread_buffers_(static_cast<size_t>(num_threads) * kNumScratchSlots),
      shared_buffers_(kNumSharedSlots) {
    SE_CHECK(num_threads > 0);
}

void* Scratch::ensure(HostBuffer& buffer, size_t bytes) {
    if (buffer.size() < bytes) {
        // Grow geometrically so that slowly increasing sizes do not reallocate every call.
        buffer = HostBuffer(std::max(bytes, buffer.size() + buffer.size() / 2));
    }
    return buffer.data();
}

void* Scratch::thread_bytes(int32_t thread, ScratchSlot slot, size_t bytes) {
    SE_CHECK(thread >= 0 && thread < num_threads_, "thread %d of %d", thread, num_threads_);
    return ensure(thread_buffers_[thread * kNumScratchSlots + static_cast<int>(slot)], bytes);
}

void* Scratch::shared_bytes(SharedSlot slot, size_t bytes) {
    return ensure(shared_buffers_[static_cast<int>(slot)], bytes);
}

}  // namespace se::cpu
