// One consumer warpgroup's math in the wgmma prefill kernel (prefill_consumer.cuh): the products
// S = Q K^T and O += P V of a 128-key tile for its 64 query rows, the causal mask, the online
// softmax of S into the weights P, and the final store. Fragment layouts: wgmma.cuh. A thread
// holds rows g and g + 8 of its warp's 16 (lane = 4 g + t): scores s[4 i + 2 h + e] are row
// g + 8 h, key 8 i + 2 t + e of the tile, and likewise o[4 i + 2 h + e] is dim 8 i + 2 t + e.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/sm90a/prefill_smem.cuh"
#include "backend/cuda/sm90a/wgmma.cuh"
#include "backend/cuda/sm90a/wgmma_layout.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda::sm90a {

inline constexpr int kScoreRegs = kWgmmaTileKeys / 2;  // f32 [64 rows, 128 keys] / 128 threads
inline constexpr int kPvSteps = kWgmmaTileKeys / 16;   // k16 steps of P V
static_assert(kWgmmaTileKeys == 128, "the QK product is one m64n128 wgmma per k16 step");

using Scores = float[kScoreRegs];       // D fragments of S
using Weights = uint32_t[kPvSteps][4];  // A fragments of P, bf16x2
using RowState = float[2];              // rows g and g + 8
template <int kHeadDim>
using OutAcc = float[kHeadDim / 2];  // D fragments of O, f32 [64 rows, head_dim]

// exp2 on the special function unit, flushing subnormal results to 0: weights below 2^-126 of
// the row's largest change nothing that bf16 P or the f32 sum can hold.
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Issues S = Q K^T for one tile: head_dim / 16 wgmmas, K-major both (wgmma_layout.h). `q` is the
// descriptor of this warpgroup's first Q row, `k` of the K tile's first key.
template <int kHeadDim>
__device__ __forceinline__ void issue_qk(Scores& s, uint64_t q, uint64_t k) {
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
        // 4 k16 steps per 128-byte slab row, then the next slab (of 128 rows, Q and K alike).
        const uint32_t offset = (step / 4) * kSlabBytes<kTileRows> + (step % 4) * kKStepBytes;
        wgmma_m64n128k16_ss(s, desc_advance(q, offset), desc_advance(k, offset), step > 0);
    }
}

// Issues O += P V for one tile: 8 wgmmas of 16 keys, V MN-major. `v` is the V tile's descriptor.
template <int kHeadDim>
__device__ __forceinline__ void issue_pv(OutAcc<kHeadDim>& o, const Weights& p, uint64_t v) {
#pragma unroll
    for (int step = 0; step < kPvSteps; ++step) {
        const uint64_t desc = desc_advance(v, step * kMnKStepBytes);
        if constexpr (kHeadDim == 128) {
            wgmma_m64n128k16_rs_mn(o, p[step], desc);
        } else {
            static_assert(kHeadDim == 64);
            wgmma_m64n64k16_rs_mn(o, p[step], desc);
        }
    }
}

// -inf for keys past each of this thread's rows' last key (keys of the tile from `first_key`).
__device__ __forceinline__ void mask_scores(Scores& s, int32_t first_key,
                                            const int32_t (&last_key)[2]) {
    const int t = static_cast<int>(threadIdx.x % 4);
#pragma unroll
    for (int i = 0; i < kScoreRegs / 4; ++i) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int32_t key = first_key + 8 * i + 2 * t + r % 2;
            if (key > last_key[r / 2]) s[4 * i + r] = -INFINITY;
        }
    }
}

// Online softmax of a tile's (unscaled) scores: updates the running max and this thread's partial
// sum of both rows, replaces the scores by their weights exp2((s - max) * scale * log2 e), and
// returns in `correction` the factor by which the rows' earlier output must shrink.
__device__ __forceinline__ void softmax_scores(Scores& s, RowState& row_max, RowState& row_sum,
                                               float scale_log2, RowState& correction) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float m = row_max[h];
#pragma unroll
        for (int i = 0; i < kScoreRegs / 4; ++i)
            m = fmaxf(m, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
        // The four lanes of a quad hold the same rows.
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        // m stays -inf only while every key so far is masked for the row: keep exp2 off
        // -inf - -inf. The correction is exp2 of the max's change, so a tile that leaves the max
        // where it was (a fully masked one, say) scales by exactly 1.
        const float base = m == -INFINITY ? 0.0f : m * scale_log2;
        correction[h] = row_max[h] == -INFINITY ? 0.0f : fast_exp2((row_max[h] - m) * scale_log2);
        row_max[h] = m;
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kScoreRegs / 4; ++i) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float& x = s[4 * i + 2 * h + e];
                x = fast_exp2(fmaf(x, scale_log2, -base));
                sum += x;
            }
        }
        row_sum[h] = row_sum[h] * correction[h] + sum;
    }
}

// The weights as bf16 A fragments of P V: k-step j is keys 16 j .. 16 j + 15, the D registers
// 8 j .. 8 j + 7 in order (wgmma.cuh).
__device__ __forceinline__ void scores_to_weights(const Scores& s, Weights& p) {
#pragma unroll
    for (int j = 0; j < kPvSteps; ++j) {
#pragma unroll
        for (int r = 0; r < 4; ++r) p[j][r] = pack_bf16x2(s[8 * j + 2 * r], s[8 * j + 2 * r + 1]);
    }
}

template <int kHeadDim>
__device__ __forceinline__ void rescale_out(OutAcc<kHeadDim>& o, const RowState& correction) {
#pragma unroll
    for (int i = 0; i < kHeadDim / 8; ++i) {
#pragma unroll
        for (int r = 0; r < 4; ++r) o[4 * i + r] *= correction[r / 2];
    }
}

// This thread's rows of the warpgroup's output, divided by their softmax sums; rows past the
// CTA's num_rows are not written. `first_row` is the warpgroup's first row in the CTA.
template <int kHeadDim>
__device__ __forceinline__ void store_rows(const PrefillAttentionParams& p, const CtaWork& w,
                                           int first_row, const OutAcc<kHeadDim>& o,
                                           const RowState& row_sum) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int warp = static_cast<int>(threadIdx.x / 32) % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float sum = row_sum[h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // 0: no visible key, a zero row
        const int row = first_row + warp * 16 + lane / 4 + 8 * h;
        if (row >= w.range.num_rows) continue;
        const int32_t packed = w.range.first_row + row;
        const int32_t head = w.kv_head * w.group + packed % w.group;
        bf16* dst = p.out + (int64_t{w.q_start} + packed / w.group) * p.out_row_stride +
                    int64_t{head} * kHeadDim + 2 * (lane % 4);
#pragma unroll
        for (int i = 0; i < kHeadDim / 8; ++i) {
            *reinterpret_cast<uint32_t*>(dst + 8 * i) =
                pack_bf16x2(o[4 * i + 2 * h] * inv, o[4 * i + 2 * h + 1] * inv);
        }
    }
}

}  // namespace se::cuda::sm90a
