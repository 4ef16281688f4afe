// The shared memory of one CTA of the wgmma prefill kernel (prefill_attention_sm90a.cu), and
// what both of its roles (producer and consumers) know about the CTA's work.
//
//   [ Q: 128 rows ][ K stage 0 ][ K stage 1 ][ V stage 0 ][ V stage 1 ][ barriers ]
//     each tile [128 rows, head_dim] bf16 in 64-dim slabs (wgmma_layout.h): 32 KiB at
//     head_dim 128, 16 KiB at 64; 160 KiB (80 KiB) in all.
//
// K and V have rings of their own, so each is released as soon as its product is done: a
// consumer frees K(t) once S(t) = Q K(t)^T has been computed, and V(t) once O += P(t) V(t) has,
// one iteration later (prefill_consumer.cuh), so K(t + 2) is copied while tile t + 1 is in the
// works. Addresses are 32-bit shared-window addresses (what cp.async, mbarrier and the wgmma
// descriptors take), found by arithmetic from a run-time stage index.
#pragma once

#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/sm90a/wgmma_layout.h"

namespace se::cuda::sm90a {

inline constexpr int kStages = 2;              // K (and V) tiles in flight
inline constexpr int kWarpgroupThreads = 128;  // 4 warps
inline constexpr int kConsumers = 2;           // consumer warpgroups of 64 rows each
inline constexpr int kCtaThreads = kWarpgroupThreads * (1 + kConsumers);  // producer first
static_assert(kConsumers * kWgmmaGroupRows == kPrefillTileRows);
inline constexpr int kTileRows = 128;  // rows of every tile: Q rows and KV keys alike
static_assert(kPrefillTileRows == kTileRows && kWgmmaTileKeys == kTileRows);

template <int kHeadDim>
struct PrefillSmem {
    static constexpr uint32_t kQBytes = kPrefillTileRows * kHeadDim * 2;
    static constexpr uint32_t kKvBytes = kWgmmaTileKeys * kHeadDim * 2;
    static constexpr uint32_t kK = kQBytes;
    static constexpr uint32_t kV = kK + kStages * kKvBytes;
    static constexpr uint32_t kBarriers = kV + kStages * kKvBytes;
    static constexpr uint32_t kNumBarriers = 1 + 4 * kStages;  // q_full, k/v full/empty rings
    static constexpr uint32_t kBytes = kBarriers + 8 * kNumBarriers;
    // The dynamic shared memory is rounded up to 1024 bytes in the kernel (the swizzle atoms must
    // start there, and the language promises only 16): allocate that much more.
    static constexpr uint32_t kAllocBytes = kBytes + kAtomBytes;
    static_assert(kQBytes % kAtomBytes == 0 && kKvBytes % kAtomBytes == 0);

    uint32_t base;  // 1024-aligned shared address

    __device__ uint32_t q() const { return base; }
    __device__ uint32_t k(int stage) const { return base + kK + stage * kKvBytes; }
    __device__ uint32_t v(int stage) const { return base + kV + stage * kKvBytes; }
    // Q has landed (the producer's cp.async arrivals).
    __device__ uint32_t q_full() const { return base + kBarriers; }
    // K (V) tile of a stage has landed, or has been read by both consumers.
    __device__ uint32_t k_full(int stage) const { return barrier(1 + stage); }
    __device__ uint32_t k_empty(int stage) const { return barrier(1 + kStages + stage); }
    __device__ uint32_t v_full(int stage) const { return barrier(1 + 2 * kStages + stage); }
    __device__ uint32_t v_empty(int stage) const { return barrier(1 + 3 * kStages + stage); }

  private:
    __device__ uint32_t barrier(int i) const { return base + kBarriers + 8 * i; }
};

// Use u = tile / kStages of ring slot tile % kStages: consumers wait for its arrival with parity
// u & 1, the producer for its release with the other parity (mbarrier.cuh).
__device__ __forceinline__ int stage_of(int32_t tile) {
    return tile % kStages;
}
__device__ __forceinline__ uint32_t full_parity(int32_t tile) {
    return static_cast<uint32_t>(tile / kStages) & 1u;
}
__device__ __forceinline__ uint32_t empty_parity(int32_t tile) {
    return full_parity(tile) ^ 1u;
}

// One CTA's share of the batch: kPrefillTileRows packed rows of one sequence and KV head.
struct CtaWork {
    PrefillTileRange range;  // in kWgmmaTileKeys tiles
    int32_t q_start = 0;     // the sequence's first row of q and out
    int32_t prefix = 0;      // kv_len - q_len
    int32_t group = 0;       // query heads per KV head
    int32_t kv_head = 0;
    int32_t seq = 0;
};

}  // namespace se::cuda::sm90a
