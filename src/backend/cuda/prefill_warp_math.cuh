// One warp's share of a KV tile in paged prefill attention (prefill_attention.cu): the warp owns
// kPrefillWarpRows = 32 query rows as two MMA m-tiles of 16, and for each kPrefillSubKeys = 32
// keys of a KV tile computes the scores Q·K^T, masks them, folds them into its online softmax
// and adds P·V to its output accumulator. Fragment layouts: warp_mma.cuh. A lane holds, per
// m-tile, rows g and g + 8 (lane = 4g + t).
//
// Two m-tiles per warp is the point of this layout: every K or V fragment a warp reads from
// shared memory feeds four MMAs instead of two, which halves the ldmatrix traffic per MMA (with
// 16 rows per warp, shared memory, not the tensor cores, bounded the kernel). Q is read from
// shared memory at every k-step instead of living in registers: it costs one ldmatrix per m-tile
// per k-step (against four for K) and frees 64 registers for the 128 of the accumulator.
// Scores for 32 keys at a time, not the whole 64-key tile: 64 scores next to the 128
// accumulators spilled (ptxas, 255 registers); 32 keys cost one more Q read and one more
// rescale of the accumulator per 64 keys, and the V reads stay the same.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/activations.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/tile_layout.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda {

inline constexpr int kPrefillMTiles = kPrefillWarpRows / 16;   // MMA M = 16
inline constexpr int kPrefillSubKeys = 32;                     // keys of one softmax step
inline constexpr int kPrefillKeyBlocks = kPrefillSubKeys / 8;  // n-blocks of scores (MMA N = 8)
inline constexpr int kPrefillKeySteps = kPrefillSubKeys / 16;  // k-steps of P·V (MMA K = 16)
static_assert(kPrefillTileKeys % kPrefillSubKeys == 0 && kPrefillSubKeys % 8 == 0);

using PrefillScores = float[kPrefillMTiles][kPrefillKeyBlocks][4];     // C fragments
using PrefillWeights = uint32_t[kPrefillMTiles][kPrefillKeySteps][4];  // A fragments, bf16x2
using PrefillRowState = float[kPrefillMTiles][2];                      // rows g and g + 8
template <int kHeadDim>
using PrefillAcc = float[kPrefillMTiles][kHeadDim / 8][4];  // C fragments, 32 rows x head_dim

// scores = q · k^T, unscaled. `q` is the warp's first row in the Q tile; `k` the first of the
// kPrefillSubKeys rows of the K tile (a multiple of 8 rows in: the swizzle is the same).
template <int kHeadDim>
__device__ __forceinline__ void qk_tile(PrefillScores& scores, const bf16* q, const bf16* k) {
    const int lane = threadIdx.x % 32;
    // Q (A) matrices 0..3: (rows 0-7, dims lo), (rows 8-15, lo), (0-7, hi), (8-15, hi)
    const int q_row = lane % 16;
    const int q_chunk = lane / 16;
    // K (B) matrices 0..3: (keys 0-7, dims lo), (keys 0-7, hi), (keys 8-15, lo), (8-15, hi)
    const int key_in = lane % 8 + (lane / 16) * 8;
    const int chunk_in = (lane / 8) % 2;
#pragma unroll
    for (int mt = 0; mt < kPrefillMTiles; ++mt) {
#pragma unroll
        for (int kb = 0; kb < kPrefillKeyBlocks; ++kb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) scores[mt][kb][e] = 0.0f;
        }
    }
    const uint32_t q_addr = smem_addr(q + tile_offset<kHeadDim>(q_row, q_chunk));
    const uint32_t k_addr = smem_addr(k + tile_offset<kHeadDim>(key_in, chunk_in));
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
        const uint32_t q_step = tile_addr_advance(q_addr, 2 * step);
        const uint32_t k_step = tile_addr_advance(k_addr, 2 * step);
        uint32_t qa[kPrefillMTiles][4];
#pragma unroll
        for (int mt = 0; mt < kPrefillMTiles; ++mt)
            ldmatrix_x4(qa[mt], q_step + mt * 16 * kHeadDim * 2);
#pragma unroll
        for (int pair = 0; pair < kPrefillKeyBlocks / 2; ++pair) {
            uint32_t b[4];
            ldmatrix_x4(b, k_step + pair * 16 * kHeadDim * 2);
#pragma unroll
            for (int mt = 0; mt < kPrefillMTiles; ++mt) {
                mma_bf16_16816(scores[mt][2 * pair], qa[mt], b[0], b[1]);
                mma_bf16_16816(scores[mt][2 * pair + 1], qa[mt], b[2], b[3]);
            }
        }
    }
}

// -inf for the keys past each of this thread's rows' last key.
__device__ __forceinline__ void mask_tile(PrefillScores& scores, int32_t first_key,
                                          const int32_t (&last_key)[kPrefillMTiles][2]) {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int mt = 0; mt < kPrefillMTiles; ++mt) {
#pragma unroll
        for (int kb = 0; kb < kPrefillKeyBlocks; ++kb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int32_t key = first_key + kb * 8 + 2 * t + e % 2;
                if (key > last_key[mt][e / 2]) scores[mt][kb][e] = -INFINITY;
            }
        }
    }
}

// Online softmax of one m-tile's scores: updates the running max and (per-thread partial) sum
// of this thread's two rows, rescales their output accumulators, and leaves the weights as bf16
// A fragments of P·V. Scores are unscaled; scale * log2(e) is folded into exp2.
template <int kDimBlocks>
__device__ __forceinline__ void softmax_m_tile(float (&scores)[kPrefillKeyBlocks][4],
                                               float (&row_max)[2], float (&row_sum)[2],
                                               float (&o)[kDimBlocks][4], float scale_log2,
                                               uint32_t (&pa)[kPrefillKeySteps][4]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        float m = row_max[i];
#pragma unroll
        for (int kb = 0; kb < kPrefillKeyBlocks; ++kb)
            m = fmaxf(m, fmaxf(scores[kb][2 * i], scores[kb][2 * i + 1]));
        // The four lanes of a quad hold the same rows.
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        // m stays -inf only while every key so far is masked for the row: keep exp2 off -inf -
        // -inf.
        const float base = m == -INFINITY ? 0.0f : m * scale_log2;
        const float correction =
            row_max[i] == -INFINITY ? 0.0f : exp2f(fmaf(row_max[i], scale_log2, -base));
        row_max[i] = m;
        row_sum[i] *= correction;
#pragma unroll
        for (int db = 0; db < kDimBlocks; ++db) {
            o[db][2 * i] *= correction;
            o[db][2 * i + 1] *= correction;
        }
#pragma unroll
        for (int kb = 0; kb < kPrefillKeyBlocks; ++kb) {
#pragma unroll
            for (int e = 2 * i; e < 2 * i + 2; ++e) {
                scores[kb][e] = exp2f(fmaf(scores[kb][e], scale_log2, -base));
                row_sum[i] += scores[kb][e];
            }
        }
    }
    // C fragments of key blocks 2s and 2s + 1 are exactly the A fragment of k-step s.
#pragma unroll
    for (int s = 0; s < kPrefillKeySteps; ++s) {
        pa[s][0] = pack_bf16x2(scores[2 * s][0], scores[2 * s][1]);
        pa[s][1] = pack_bf16x2(scores[2 * s][2], scores[2 * s][3]);
        pa[s][2] = pack_bf16x2(scores[2 * s + 1][0], scores[2 * s + 1][1]);
        pa[s][3] = pack_bf16x2(scores[2 * s + 1][2], scores[2 * s + 1][3]);
    }
}

template <int kHeadDim>
__device__ __forceinline__ void softmax_tile(PrefillScores& scores, PrefillRowState& row_max,
                                             PrefillRowState& row_sum, PrefillAcc<kHeadDim>& o,
                                             float scale_log2, PrefillWeights& pa) {
#pragma unroll
    for (int mt = 0; mt < kPrefillMTiles; ++mt) {
        softmax_m_tile<kHeadDim / 8>(scores[mt], row_max[mt], row_sum[mt], o[mt], scale_log2,
                                     pa[mt]);
    }
}

// o += p · v, `v` the first of the kPrefillSubKeys rows of the V tile.
template <int kHeadDim>
__device__ __forceinline__ void pv_tile(PrefillAcc<kHeadDim>& o, const PrefillWeights& pa,
                                        const bf16* v) {
    const int lane = threadIdx.x % 32;
    // V (B, transposed) matrices 0..3: (keys 0-7, dims lo), (keys 8-15, lo), (0-7, hi), (8-15, hi)
    const int key_in = lane % 8 + ((lane / 8) % 2) * 8;
    const int chunk_in = lane / 16;
    const uint32_t v_addr = smem_addr(v + tile_offset<kHeadDim>(key_in, chunk_in));
#pragma unroll
    for (int s = 0; s < kPrefillKeySteps; ++s) {
#pragma unroll
        for (int pair = 0; pair < kHeadDim / 16; ++pair) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, tile_addr_advance(v_addr, 2 * pair) + s * 16 * kHeadDim * 2);
#pragma unroll
            for (int mt = 0; mt < kPrefillMTiles; ++mt) {
                mma_bf16_16816(o[mt][2 * pair], pa[mt][s], b[0], b[1]);
                mma_bf16_16816(o[mt][2 * pair + 1], pa[mt][s], b[2], b[3]);
            }
        }
    }
}

}  // namespace se::cuda
