// One warp's share of a decode attention partition (decode_attention.cu): an online softmax over
// its 16-key tiles on the tensor cores (mma.m16n8k16, bf16 in, f32 accumulate), with the GQA
// group as the 8 useful rows:
//
//   scores  S   [heads 16 x keys 8]  = Q [heads x dims] · K^T      (heads 8..15 are zero rows)
//   output  O^T [dims 16 x heads 8] += V^T [dims x keys 16] · P^T  (P from S's registers)
//
// The score fragments of S (head lane/4, keys 2(lane%4) + {0, 1}) are already the B fragments of
// P^T, so probabilities never leave registers. P enters as two bf16 terms (P ≈ hi + lo, relative
// error ~2^-17) so the bf16 tensor-core input costs no accuracy against the f32 reference. Scores
// are kept in log2 units (exp2f).
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/decode_tile.cuh"

namespace se::cuda::decode {

static_assert(kDecodeMaxGroup == 8, "the group is the n = 8 of the MMAs");

// The online softmax state of one warp, for the 8 head rows of the group (lane / 4 is the head
// whose max and sum the lane keeps; heads past the group are zero rows nobody reads).
template <int kHeadDim>
struct WarpAttention {
    static constexpr int kDimSteps = kHeadDim / 16;
    uint32_t q[kDimSteps][2];  // bf16x2: Q A fragments, head lane/4, dims 16s + 2(lane%4) (+8)
    float acc[kDimSteps][4];   // O^T fragments: dims 16s + lane/4 (+8), heads 2(lane%4) + {0,1}
    float max = -INFINITY;     // log2 units, head lane/4
    float sum = 0.0f;          // this lane's keys only, head lane/4, relative to max
};

// S = Q K^T for the tile's 16 keys: s[j] holds keys 8j..8j+7; s[j][0..1] are head lane/4 at
// keys 8j + 2(lane%4) + {0, 1}, s[j][2..3] are the zero rows of heads 8..15.
template <int kHeadDim>
__device__ __forceinline__ void score_tile(const WarpAttention<kHeadDim>& w, uint32_t k_tile,
                                           float (&s)[2][4]) {
    using T = Tile<kHeadDim>;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
        // Matrix m of the x4 is keys 8j.., chunk 4c + m: B fragments of dim steps 2c and 2c+1.
#pragma unroll
        for (int c = 0; c < T::kChunks / 4; ++c) {
            uint32_t b[4];
            ldmatrix_x4(k_tile + T::offset(8 * j + lane % 8, 4 * c + lane / 8), b);
            mma_bf16(s[j], w.q[2 * c][0], 0u, w.q[2 * c][1], 0u, b[0], b[1]);
            mma_bf16(s[j], w.q[2 * c + 1][0], 0u, w.q[2 * c + 1][1], 0u, b[2], b[3]);
        }
    }
}

// Scores, softmax update and V accumulation of one tile whose K and V are at k_tile.
template <int kHeadDim>
__device__ __forceinline__ void attend_tile(WarpAttention<kHeadDim>& w, uint32_t k_tile,
                                            int32_t first_key, int32_t num_keys, float scale_log2) {
    using T = Tile<kHeadDim>;
    const int lane = threadIdx.x % 32;
    float s[2][4];
    score_tile(w, k_tile, s);

    // x[2j + i]: key 8j + 2(lane%4) + i of the tile, head lane/4.
    float x[4] = {s[0][0], s[0][1], s[1][0], s[1][1]};
    float tile_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int32_t key = first_key + 8 * (i / 2) + 2 * (lane % 4) + i % 2;
        x[i] = key < num_keys ? x[i] * scale_log2 : -INFINITY;
        tile_max = fmaxf(tile_max, x[i]);
    }
    // The 4 lanes of a head hold its 16 keys; the tile's first key always exists.
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(w.max, tile_max);
    const float alpha = exp2f(w.max - new_max);  // 0 on the first tile
    w.max = new_max;
    float e[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) e[i] = exp2f(x[i] - new_max);
    w.sum = w.sum * alpha + ((e[0] + e[1]) + (e[2] + e[3]));

    // P^T B fragments: keys 2(lane%4) + {0,1} (b0) and 8 + 2(lane%4) + {0,1} (b1), head lane/4,
    // as hi + lo bf16 terms.
    uint32_t hi[2], lo[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(e[2 * j], e[2 * j + 1]);
        hi[j] = bf16x2_bits(h);
        lo[j] = bf16x2_bits(
            __floats2bfloat162_rn(e[2 * j] - __low2float(h), e[2 * j + 1] - __high2float(h)));
    }
    // The accumulator columns of this lane are heads 2(lane%4) and 2(lane%4) + 1.
    const float alpha_even = __shfl_sync(0xffffffffu, alpha, 8 * (lane % 4));
    const float alpha_odd = __shfl_sync(0xffffffffu, alpha, 8 * (lane % 4) + 4);
    const uint32_t v_tile = k_tile + T::kBytes;
#pragma unroll
    for (int d = 0; d < WarpAttention<kHeadDim>::kDimSteps; ++d) {
        w.acc[d][0] *= alpha_even;
        w.acc[d][1] *= alpha_odd;
        w.acc[d][2] *= alpha_even;
        w.acc[d][3] *= alpha_odd;
        // Matrix m of the x4 is keys 8(m/2).., chunk 2d + m%2, transposed: the V^T A fragment.
        const int m = lane / 8;
        uint32_t a[4];
        ldmatrix_x4_trans(v_tile + T::offset(8 * (m / 2) + lane % 8, 2 * d + m % 2), a);
        mma_bf16(w.acc[d], a[0], a[1], a[2], a[3], hi[0], hi[1]);
        mma_bf16(w.acc[d], a[0], a[1], a[2], a[3], lo[0], lo[1]);
    }
}

// Q A fragments of the group (heads past it are zero), accumulators cleared.
template <int kHeadDim>
__device__ __forceinline__ void init_warp(const DecodeAttentionParams& p, int32_t seq,
                                          int32_t kv_head, int32_t group,
                                          WarpAttention<kHeadDim>& w) {
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const bf16* q = p.q + seq * p.q_row_stride +
                    int64_t{kv_head * group + min(g, group - 1)} * kHeadDim + 2 * (lane % 4);
#pragma unroll
    for (int d = 0; d < WarpAttention<kHeadDim>::kDimSteps; ++d) {
        w.q[d][0] = g < group ? *reinterpret_cast<const uint32_t*>(q + 16 * d) : 0u;
        w.q[d][1] = g < group ? *reinterpret_cast<const uint32_t*>(q + 16 * d + 8) : 0u;
        w.acc[d][0] = w.acc[d][1] = w.acc[d][2] = w.acc[d][3] = 0.0f;
    }
}

// One warp's (max, sum, acc) per head, at the start of its ring once the ring is drained:
//   max f32 [8], sum f32 [8], acc f32 [8, kStride]
template <int kHeadDim>
struct WarpResult {
    static constexpr int kStride = kHeadDim + 4;  // floats per head: no bank conflicts
    static_assert((2 + kStride) * kDecodeMaxGroup * 4 <= Tile<kHeadDim>::kWarpBytes,
                  "warp results fit the ring");
    float* max;
    float* sum;
    float* acc;

    __device__ static WarpResult at(uint8_t* smem, int warp) {
        auto* base = reinterpret_cast<float*>(smem + warp * Tile<kHeadDim>::kWarpBytes);
        return {base, base + kDecodeMaxGroup, base + 2 * kDecodeMaxGroup};
    }
};

template <int kHeadDim>
__device__ __forceinline__ void store_warp(const WarpAttention<kHeadDim>& w,
                                           const WarpResult<kHeadDim>& r) {
    constexpr int kStride = WarpResult<kHeadDim>::kStride;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int h = 2 * (lane % 4);
    float sum = w.sum + __shfl_xor_sync(0xffffffffu, w.sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (lane % 4 == 0) {
        r.max[g] = w.max;
        r.sum[g] = sum;
    }
#pragma unroll
    for (int d = 0; d < WarpAttention<kHeadDim>::kDimSteps; ++d) {
        r.acc[h * kStride + 16 * d + g] = w.acc[d][0];
        r.acc[(h + 1) * kStride + 16 * d + g] = w.acc[d][1];
        r.acc[h * kStride + 16 * d + g + 8] = w.acc[d][2];
        r.acc[(h + 1) * kStride + 16 * d + g + 8] = w.acc[d][3];
    }
}

}  // namespace se::cuda::decode
