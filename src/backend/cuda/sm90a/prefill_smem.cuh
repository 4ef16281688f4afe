// The shared memory of one CTA of the wgmma prefill kernel (prefill_attention_sm90a.cu), and
// what both of its roles (producer and consumers) know about the CTA's work.
//
//   [ Q: 128 rows ][ K slot 0 ] .. [ K slot kKStages-1 ][ V slot 0 ] .. [ V slot kVStages-1 ]
//   [ barriers ]
//     each tile [128 rows, head_dim] bf16 in 64-dim slabs (wgmma_layout.h): 32 KiB at
//     head_dim 128, 16 KiB at 64. 2 + 2 slots: 160 KiB (80 KiB); 2 + 3: 192 KiB (96 KiB).
//
// K and V have rings of their own, so each is released as soon as its product is done: a
// consumer frees K(t) once S(t) = Q K(t)^T has been computed, and V(t) once O += P(t) V(t) has,
// one step later (prefill_consumer.cuh) or, in the overlapped consumer, two steps later at the
// latest (prefill_consumer_overlap.cuh says why V then has a third slot). Addresses are 32-bit
// shared-window addresses (what cp.async, TMA, mbarrier and the wgmma descriptors take), found by
// arithmetic from a run-time slot index.
#pragma once

#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/sm90a/wgmma_layout.h"

namespace se::cuda::sm90a {

inline constexpr int kStages = 2;              // K (and V) tiles in flight, by default
inline constexpr int kWarpgroupThreads = 128;  // 4 warps
inline constexpr int kConsumers = 2;           // consumer warpgroups of 64 rows each
inline constexpr int kCtaThreads = kWarpgroupThreads * (1 + kConsumers);  // producer first
static_assert(kConsumers * kWgmmaGroupRows == kPrefillTileRows);
inline constexpr int kTileRows = 128;  // rows of every tile: Q rows and KV keys alike
static_assert(kPrefillTileRows == kTileRows && kWgmmaTileKeys == kTileRows);

template <int kHeadDim, int kKSlots = kStages, int kVSlots = kStages>
struct PrefillSmem {
    static constexpr int kKStages = kKSlots;
    static constexpr int kVStages = kVSlots;
    static constexpr uint32_t kQBytes = kPrefillTileRows * kHeadDim * 2;
    static constexpr uint32_t kKvBytes = kWgmmaTileKeys * kHeadDim * 2;
    static constexpr uint32_t kK = kQBytes;
    static constexpr uint32_t kV = kK + kKStages * kKvBytes;
    static constexpr uint32_t kBarriers = kV + kVStages * kKvBytes;
    // q_full, then the full and empty barriers of the K ring and of the V ring
    static constexpr uint32_t kNumBarriers = 1 + 2 * kKStages + 2 * kVStages;
    static constexpr uint32_t kBytes = kBarriers + 8 * kNumBarriers;
    // The dynamic shared memory is rounded up to 1024 bytes in the kernel (the swizzle atoms must
    // start there, and the language promises only 16): allocate that much more.
    static constexpr uint32_t kAllocBytes = kBytes + kAtomBytes;
    static_assert(kQBytes % kAtomBytes == 0 && kKvBytes % kAtomBytes == 0);
    static_assert(kAllocBytes <= 227 * 1024, "more than a CTA's shared memory on sm_90");

    uint32_t base;  // 1024-aligned shared address

    __device__ uint32_t q() const { return base; }
    __device__ uint32_t k(int stage) const { return base + kK + stage * kKvBytes; }
    __device__ uint32_t v(int stage) const { return base + kV + stage * kKvBytes; }
    // Q has landed (the producer's cp.async arrivals).
    __device__ uint32_t q_full() const { return base + kBarriers; }
    // K (V) tile of a slot has landed, or has been read by both consumers.
    __device__ uint32_t k_full(int stage) const { return barrier(1 + stage); }
    __device__ uint32_t k_empty(int stage) const { return barrier(1 + kKStages + stage); }
    __device__ uint32_t v_full(int stage) const { return barrier(1 + 2 * kKStages + stage); }
    __device__ uint32_t v_empty(int stage) const {
        return barrier(1 + 2 * kKStages + kVStages + stage);
    }

  private:
    __device__ uint32_t barrier(int i) const { return base + kBarriers + 8 * i; }
};

// Use u = tile / kDepth of ring slot tile % kDepth: consumers wait for its arrival with parity
// u & 1, the producer for its release with the other parity (barriers.cuh).
template <int kDepth>
__device__ __forceinline__ int ring_slot(int32_t tile) {
    return tile % kDepth;
}
template <int kDepth>
__device__ __forceinline__ uint32_t ring_full_parity(int32_t tile) {
    return static_cast<uint32_t>(tile / kDepth) & 1u;
}
template <int kDepth>
__device__ __forceinline__ uint32_t ring_empty_parity(int32_t tile) {
    return ring_full_parity<kDepth>(tile) ^ 1u;
}

// The same for the default depth (kStages), which the ping-pong consumer uses for both rings.
__device__ __forceinline__ int stage_of(int32_t tile) {
    return ring_slot<kStages>(tile);
}
__device__ __forceinline__ uint32_t full_parity(int32_t tile) {
    return ring_full_parity<kStages>(tile);
}
__device__ __forceinline__ uint32_t empty_parity(int32_t tile) {
    return ring_empty_parity<kStages>(tile);
}

// One CTA's share of the batch: kPrefillTileRows packed rows of one sequence and KV head.
struct CtaWork {
    PrefillTileRange range;         // in kWgmmaTileKeys tiles
    int32_t first_copied_tile = 0;  // K/V tiles from here on come by cp.async, the rest by TMA
    int32_t q_start = 0;            // the sequence's first row of q and out
    int32_t prefix = 0;             // kv_len - q_len
    int32_t group = 0;              // query heads per KV head
    int32_t kv_head = 0;
    int32_t seq = 0;
};

}  // namespace se::cuda::sm90a
