// How a GEMV CTA (gemv.cu) stores its 16 x 16 output tile: the warps' partial sums added in
// shared memory, then one of the epilogues (GemvEpilogue) on each output.
//
// kSiluMul (the gated MLP): a CTA takes 8 rows of gate as the MMA's rows g and 8 rows of up, the
// same output features, as its rows g + 8, so one thread ends with both sums of a feature and
// writes silu(gate) * up: the two products and silu_mul in one launch, with the same roundings.
//
// kRopeStore (a decode step's q, k and v): a q or k CTA takes the first elements of 8 rotation
// pairs of one head as its rows g and their partners as rows g + 8 (neox: dims f and f + 64 of a
// head of 128), so one thread ends with both sums of a pair, rounds them to bf16 as the
// projection's output would be and rotates them (rope_pair.cuh); v tiles are plain 16-row ones.
// q goes to its output, k and v to their cache entries: the projections, RoPE and the KV store in
// one launch, with the roundings of the three.
//
// kResidualNorm (o and down at one row of x): the product, rounded to bf16, is added into the f32
// residual, bf16(norm weight x residual) goes to y and the tile's sum of squares to sq_sums; the
// next projection applies the row's 1 / rms from those sums (GemvRowScale, backend/rms_scale.h).
#pragma once

#include <cstdint>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/rope_pair.cuh"

namespace se::cuda::gemv_tile {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kTileRows = kGemvTileRows;  // weight rows per CTA: the MMA's M

// The CTA's segment of the launch (gemv.cu's segment_of).
struct SegmentView {
    const bf16* w;
    void* y;
    int64_t n;
    int64_t ldy;
    bool y_f32;
};

// silu_mul's arithmetic on the two projections as they would be stored (bf16), so that the fused
// launch gives the bits of gemv + silu_mul.
__device__ __forceinline__ bf16 silu_mul_of(float gate_sum, float up_sum) {
    const float g = __bfloat162float(__float2bfloat16_rn(gate_sum));
    const float u = __bfloat162float(__float2bfloat16_rn(up_sum));
    return __float2bfloat16_rn(silu_times(g, u));
}

// The weight (and output) rows of a kRopeStore q or k tile at row0: rotation pair f of the tile's
// head, whose elements are tile rows g and g + 8 (a tile holds pairs f0 .. f0 + 7 of one head).
struct RopeRows {
    int64_t lo;
    int64_t hi;
    int32_t f;
};

__device__ __forceinline__ RopeRows rope_rows(const GemvRopeStore& rope, int64_t row0, int g) {
    const int64_t head_row = row0 / rope.head_dim * rope.head_dim;
    const int32_t f = static_cast<int32_t>(row0 - head_row) / 2 + g;
    const int2 ab = rope_pair_of(rope.style, f, rope.head_dim / 2);
    return {head_row + ab.x, head_row + ab.y, f};
}

// kRopeStore's write of tile row r (< 8 for q and k, whose rows r and r + 8 are a pair) of x row
// col, from sum_of(tile row): q rotated into y, k rotated and v as it is into the row's cache
// entry (nothing where the slot is outside the cache).
template <typename SumOf>
__device__ __forceinline__ void store_rope(const GemvRopeStore& rope, const SegmentView& s, int seg,
                                           int64_t row0, int col, int r, const SumOf& sum_of) {
    const auto rounded = [](float sum) { return __bfloat162float(__float2bfloat16_rn(sum)); };
    bf16* dst = nullptr;
    if (seg == 0) {
        dst = static_cast<bf16*>(s.y) + int64_t{col} * s.ldy;
    } else {
        const int64_t slot = rope.slots[col];
        if (slot < 0 || slot >= rope.num_slots) return;
        dst = (seg == 1 ? rope.k_blocks : rope.v_blocks) + slot * s.n;
    }
    if (seg == 2) {
        dst[row0 + r] = __float2bfloat16_rn(sum_of(r));
        return;
    }
    if (r >= kTileRows / 2) return;
    const RopeRows rows = rope_rows(rope, row0, r);
    const __nv_bfloat162 out = rope_rotate(rounded(sum_of(r)), rounded(sum_of(r + kTileRows / 2)),
                                           rope.positions[col], rope.inv_freq[rows.f]);
    dst[rows.lo] = out.x;
    dst[rows.hi] = out.y;
}

// kResidualNorm's inputs for tile row threadIdx.x (threads 0..15), loaded before the GEMV's loop:
// in the epilogue the residual's load, the residual's store and then the weight's load (which
// the compiler could not move above a store that might alias it) were two round trips on the
// critical path of every o and down CTA.
struct NormRow {
    float weight = 0.0f;
    float residual = 0.0f;
};

// kResidualNorm's write of tile row r (x row 0) from its sum, by the CTA's first 16 threads (all
// of them, so that they can add their squares; thread r holds row r's NormRow): the residual, the
// normed row before its 1 / rms, and the tile's sum of squares.
__device__ __forceinline__ void store_residual_norm(const GemvResidualNorm& norm,
                                                    const SegmentView& s, int64_t row0, int r,
                                                    float sum, const NormRow& in) {
    const int64_t row = row0 + r;
    float sq = 0.0f;
    if (row < s.n) {
        // add_rms_norm's arithmetic on the product as a bf16 matmul would store it.
        const float residual = in.residual + __bfloat162float(__float2bfloat16_rn(sum));
        norm.residual[row] = residual;
        static_cast<bf16*>(s.y)[row] = __float2bfloat16_rn(in.weight * residual);
        sq = residual * residual;
    }
    constexpr unsigned kRowLanes = (1u << kTileRows) - 1;  // lanes 0..15 of warp 0
#pragma unroll
    for (int off = kTileRows / 2; off > 0; off /= 2) sq += __shfl_xor_sync(kRowLanes, sq, off);
    if (r == 0) norm.sq_sums[row0 / kTileRows] = sq;
}

// GemvRowScale's sum of squares: the entries of sq_sums past the first kThreads (each thread
// loaded its first one before the loop, into `first`), then the whole CTA's; every thread gets it
// after the __syncthreads() that store_tile has anyway, through warp_sums.
__device__ __forceinline__ void add_row_squares(const GemvRowScale& scale, int64_t k, float first,
                                                float (&warp_sums)[kWarps]) {
    const int64_t parts = gemv_norm_sums(k);
    float sum = first;
    for (int64_t j = threadIdx.x + kThreads; j < parts; j += kThreads) sum += scale.sq_sums[j];
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
}

// The CTA's shared memory: store_tile's partial sums, f32 [warp, half * 4 + register, lane].
__host__ __device__ constexpr int64_t partial_bytes(int halves) {
    return int64_t{kWarps} * halves * 4 * 32 * 4;
}

// All of a CTA's static shared memory: the partial sums, and at up to 8 rows the row scale's
// per-warp sums.
__host__ __device__ constexpr int64_t static_smem_bytes(int halves) {
    return partial_bytes(halves) + (halves == 1 ? int64_t{kWarps} * 4 : 0);
}

// Sums the warps' accumulators of the CTA's 16 x 16 output tile (acc[h] holds x rows 8h..8h+7)
// and stores the used part: thread e owns x row e / 16 and tile row e % 16, so neighbouring
// threads write neighbouring y. With kSiluMul tile rows 0..7 are gate and 8..15 up of output
// features row0 + (0..7); the threads of rows 0..7 write both. kRopeStore: store_rope.
// kResidualNorm: store_residual_norm. With a row scale (m = 1), every sum is scaled first.
// row_squares: this thread's first entry of p.x_scale.sq_sums (kHalves = 1; unused otherwise);
// norm_row: kResidualNorm's inputs of this thread's row (unused otherwise).
template <int kHalves, GemvEpilogue kEpilogue>
__device__ __forceinline__ void store_tile(const float (&acc)[kHalves][4], const GemvParams& p,
                                           const SegmentView& s, int seg, int64_t row0,
                                           float row_squares, const NormRow& norm_row) {
    __shared__ float partial[kWarps][kHalves * 4][32];
    static_assert(sizeof(partial) == partial_bytes(kHalves));
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp][h * 4 + i][lane] = acc[h][i];
    }
    float scale = 1.0f;
    if constexpr (kHalves == 1) {
        __shared__ float warp_sums[kWarps];
        static_assert(sizeof(partial) + sizeof(warp_sums) == static_smem_bytes(kHalves));
        const bool scaled = p.x_scale.sq_sums != nullptr;
        if (scaled) add_row_squares(p.x_scale, p.k, row_squares, warp_sums);
        __syncthreads();
        if (scaled) {
            float total = 0.0f;
#pragma unroll
            for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
            scale = rsqrtf(total / static_cast<float>(p.k) + p.x_scale.eps);
        }
    } else {
        static_assert(sizeof(partial) == static_smem_bytes(kHalves));
        __syncthreads();
    }
    static_assert(kTileRows * kGemvMaxRows == kThreads);
    const int col = static_cast<int>(threadIdx.x) / kTileRows;  // x row
    const int r = static_cast<int>(threadIdx.x) % kTileRows;    // row within the tile
    // The C fragment holds (row g, col 2t + j) in register j and (row g + 8, col 2t + j) in 2 + j.
    const int half = col / 8;
    const int src_lane = (r % 8) * 4 + (col % 8) / 2;
    const auto sum_of = [&](int tile_row) {
        const int src_reg = half * 4 + (tile_row / 8) * 2 + col % 2;
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) sum += partial[w][src_reg][src_lane];
        return sum * scale;
    };
    if (col >= p.m || col >= kHalves * 8) return;
    if constexpr (kEpilogue == GemvEpilogue::kResidualNorm) {
        static_assert(kHalves == 1);
        // m = 1: col 0, threads 0..15.
        store_residual_norm(p.norm, s, row0, r, sum_of(r), norm_row);
    } else if constexpr (kEpilogue == GemvEpilogue::kRopeStore) {
        store_rope(p.rope, s, seg, row0, col, r, sum_of);
    } else if constexpr (kEpilogue == GemvEpilogue::kSiluMul) {
        const int64_t row = row0 + r;
        if (r >= kTileRows / 2 || row >= s.n) return;
        static_cast<bf16*>(s.y)[int64_t{col} * s.ldy + row] = silu_mul_of(sum_of(r), sum_of(r + 8));
    } else {
        const int64_t row = row0 + r;
        if (row >= s.n) return;
        const float sum = sum_of(r);
        const int64_t at = int64_t{col} * s.ldy + row;
        if (s.y_f32) {
            static_cast<float*>(s.y)[at] = sum;
        } else {
            static_cast<bf16*>(s.y)[at] = __float2bfloat16_rn(sum);
        }
    }
}

}  // namespace se::cuda::gemv_tile
