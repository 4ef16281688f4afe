// The copies of paged prefill attention (prefill_attention.cu): a CTA's packed query rows, and
// one KV tile of K and V gathered from the paged cache, global -> shared with cp.async into the
// swizzled layout of tile_layout.h. Every thread of the CTA takes part; the caller commits the
// group and waits for it.
#pragma once

#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/tile_layout.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda {

inline constexpr int kPrefillThreads = kPrefillWarps * 32;

// Where one KV head's entries of one sequence sit in the paged cache.
struct KvSource {
    const int32_t* table;  // i32 [ceil(kv_len / block_size)], the sequence's block ids
    int32_t block_shift;   // log2(block_size)
    int64_t entry_elems;   // num_kv_heads * head_dim: elements between consecutive slots
    int64_t head_offset;   // kv_head * head_dim
};

// Keys [first_key, first_key + kPrefillTileKeys) of K into `k_dst` and of V into `v_dst`. A
// thread copies the same rows of K and V, so it looks each row's block up once for both; the
// threads of a row read the same table entry (one broadcast), and a thread's lookups are
// independent loads in flight together. Keys from end_key on are
// zeros (never read from the cache: their block table entries may not exist), so that P·V
// multiplies finite values by the zero weights the mask gives them.
template <int kHeadDim>
__device__ __forceinline__ void load_kv_tiles(bf16* k_dst, bf16* v_dst,
                                              const PrefillAttentionParams& p, const KvSource& src,
                                              int32_t first_key, int32_t end_key) {
    using Plan = TileCopyPlan<kHeadDim, kPrefillThreads, kPrefillTileKeys>;
    const int thread = static_cast<int>(threadIdx.x);
    const int chunk = Plan::chunk(thread);
    const int32_t block_mask = (1 << src.block_shift) - 1;
    int64_t from[Plan::kPasses];  // elements from the cache's start; 0 for keys past end_key
#pragma unroll
    for (int pass = 0; pass < Plan::kPasses; ++pass) {
        const int32_t key = first_key + Plan::row(thread, pass);
        from[pass] = 0;
        if (key < end_key) {
            const int64_t block = __ldg(src.table + (key >> src.block_shift));
            const int64_t slot = (block << src.block_shift) | (key & block_mask);
            from[pass] = slot * src.entry_elems + src.head_offset + chunk * 8;
        }
    }
#pragma unroll
    for (int pass = 0; pass < Plan::kPasses; ++pass) {
        const int row = Plan::row(thread, pass);
        cp_async_16(smem_addr(k_dst + tile_offset<kHeadDim>(row, chunk)), p.k_blocks + from[pass],
                    first_key + row < end_key);
    }
#pragma unroll
    for (int pass = 0; pass < Plan::kPasses; ++pass) {
        const int row = Plan::row(thread, pass);
        cp_async_16(smem_addr(v_dst + tile_offset<kHeadDim>(row, chunk)), p.v_blocks + from[pass],
                    first_key + row < end_key);
    }
}

// The CTA's packed query rows (prefill_tiles.h) into `dst`; rows past the tile's num_rows are
// zeros.
template <int kHeadDim>
__device__ __forceinline__ void load_q_tile(bf16* dst, const PrefillAttentionParams& p,
                                            int32_t q_start, const PrefillTileRange& range,
                                            int32_t group, int32_t kv_head) {
    using Plan = TileCopyPlan<kHeadDim, kPrefillThreads, kPrefillTileRows>;
    const int thread = static_cast<int>(threadIdx.x);
    const int chunk = Plan::chunk(thread);
#pragma unroll
    for (int pass = 0; pass < Plan::kPasses; ++pass) {
        const int row = Plan::row(thread, pass);
        const bool valid = row < range.num_rows;
        const bf16* from = p.q;
        if (valid) {
            const int32_t packed = range.first_row + row;
            const int32_t head = kv_head * group + packed % group;
            from = p.q + (int64_t{q_start} + packed / group) * p.q_row_stride +
                   int64_t{head} * kHeadDim + chunk * 8;
        }
        cp_async_16(smem_addr(dst + tile_offset<kHeadDim>(row, chunk)), from, valid);
    }
}

}  // namespace se::cuda
