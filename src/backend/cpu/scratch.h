// Scratch memory of the CPU kernels: one set of buffers per thread plus a few shared ones, kept
// across calls and grown on demand, so that steady-state calls allocate nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_buffer.h"

namespace se::cpu {

// What a buffer is used for; each kernel owns its slots.
enum class ScratchSlot : uint8_t {
    kPanel,      // matmul: one chunk of a dequantized weight panel
    kGemmAccum,  // matmul: the GEMM's 8-lane sums carried from one panel chunk to the next
    kKeys,       // attention: one KV block's keys as f32
    kValues,     // attention: one KV block's values as f32
    kQueries,    // attention: the tile's scaled queries
    kScores,     // attention: scores / probabilities of one KV head's queries against a chunk
    kAccum,      // attention: unnormalised outputs and softmax state of the tile
    kPartition,  // attention: the tile's state over one KV partition, before the merge
};
inline constexpr int kNumScratchSlots = 8;

// Buffers shared by all threads of a call, sized before the parallel region starts.
enum class SharedSlot : uint8_t {
    kPartials,  // attention: states of KV partitions run as separate items, before the merge
};
inline constexpr int kNumSharedSlots = 1;

class Scratch {
  public:
    explicit Scratch(int32_t num_threads);

    int32_t num_threads() const { return num_threads_; }

    // At least `bytes` bytes, 64-byte aligned, for thread `thread` (its own buffer: safe to call
    // from inside a parallel region). Contents are not preserved when the buffer grows.
    void* thread_bytes(int32_t thread, ScratchSlot slot, size_t bytes);
    float* thread_floats(int32_t thread, ScratchSlot slot, int64_t count) {
        return static_cast<float*>(thread_bytes(thread, slot, count * sizeof(float)));
    }

    // At least `bytes` bytes shared by all threads. Call outside parallel regions.
    void* shared_bytes(SharedSlot slot, size_t bytes);
    float* shared_floats(SharedSlot slot, int64_t count) {
        return static_cast<float*>(shared_bytes(slot, count * sizeof(float)));
    }

  private:
    static void* ensure(HostBuffer& buffer, size_t bytes);

    int32_t num_threads_;
    std::vector<HostBuffer> thread_buffers_;  // [num_threads * kNumScratchSlots]
    std::vector<HostBuffer> shared_buffers_;  // [kNumSharedSlots]
};

}  // namespace se::cpu
