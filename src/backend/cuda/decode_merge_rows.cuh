// The second kernel's merge of one (sequence, query head) of decode attention over its partials,
// in decode_merge.cuh's order, for both splits: rows p = 0 .. count of a partition launch are its
// partitions (decode_attention.cu), those of a balanced one the ranges of consecutive blocks
// (decode_balanced.cu). One block of kMergeLanes threads: the lanes of the totals are its threads,
// the accumulator chains its warps, the dims of a chain its lanes.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/decode_merge.cuh"

namespace se::cuda::decode {

// out_row = the merge of rows row(0) .. row(count - 1) (count >= 2), each a Workspace row of
// kRowFloats; row(i) must be cheap (an address computation).
template <int kHeadDim, typename RowOf>
__device__ void merge_rows(int32_t count, const RowOf& row, bf16* out_row) {
    using W = Workspace<kHeadDim>;
    constexpr int kLaneDims = kHeadDim / 32;
    constexpr int kLaneGroups = kMergeLanes / 32;
    constexpr int kHeldRows = 4;
    static_assert(kLaneGroups == kMergeChains, "one chain per warp");
    __shared__ float s_max[kLaneGroups];
    __shared__ float s_sum[kLaneGroups];
    __shared__ float s_acc[kMergeChains][kHeadDim];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;

    // The first kHeldRows rows of this warp's chain, loaded with the maxes below so that the round
    // trips to memory overlap (one, not two, up to kMergeChains * kHeldRows partials).
    float held[kHeldRows][kLaneDims];
    float held_max[kHeldRows];
#pragma unroll
    for (int i = 0; i < kHeldRows; ++i) {
        const int32_t part = warp + i * kMergeChains;
        if (part >= count) continue;
        const float* r = row(part);
#pragma unroll
        for (int e = 0; e < kLaneDims; ++e) held[i][e] = r[lane * kLaneDims + e];
        held_max[i] = r[W::kMax];
    }

    float max = -INFINITY;
    for (int32_t i = threadIdx.x; i < count; i += kMergeLanes) max = fmaxf(max, row(i)[W::kMax]);
    max = warp_max(max);
    if (lane == 0) s_max[warp] = max;
    __syncthreads();
    max = s_max[0];
#pragma unroll
    for (int w = 1; w < kLaneGroups; ++w) max = fmaxf(max, s_max[w]);
    float t = 0.0f;
    for (int32_t i = threadIdx.x; i < count; i += kMergeLanes)
        t = lse_term(t, row(i)[W::kMax], row(i)[W::kSum], max);
    t = warp_sum(t);
    if (lane == 0) s_sum[warp] = t;
    __syncthreads();
    const LseMerge merge{max, 1.0f / sum_in_order(s_sum)};

    float chain[kLaneDims] = {};
#pragma unroll
    for (int i = 0; i < kHeldRows; ++i) {
        if (warp + i * kMergeChains >= count) break;
        const float f = merge.scale(held_max[i]);
#pragma unroll
        for (int e = 0; e < kLaneDims; ++e) chain[e] = fmaf(f, held[i][e], chain[e]);
    }
#pragma unroll 4
    for (int32_t part = warp + kHeldRows * kMergeChains; part < count; part += kMergeChains) {
        const float* r = row(part);
        const float f = merge.scale(r[W::kMax]);
#pragma unroll
        for (int e = 0; e < kLaneDims; ++e) chain[e] = fmaf(f, r[lane * kLaneDims + e], chain[e]);
    }
#pragma unroll
    for (int e = 0; e < kLaneDims; ++e) s_acc[warp][lane * kLaneDims + e] = chain[e];
    __syncthreads();
    for (int d = threadIdx.x; d < kHeadDim; d += kMergeLanes) {
        float x = 0.0f;
#pragma unroll
        for (int c = 0; c < kMergeChains; ++c) x = x + s_acc[c][d];
        out_row[d] = __float2bfloat16_rn(x);
    }
}

}  // namespace se::cuda::decode
