// A consumer warpgroup of the wgmma prefill kernel (prefill_attention_sm90a.cu): 64 packed query
// rows of the CTA, their online softmax and output accumulator in registers, over the KV tiles
// that the producer (prefill_producer.cuh) streams through the rings of prefill_smem.cuh.
//
// Schedule (FlashAttention-3's): each step issues two products as one batch, then does the
// softmax of the first while the second runs:
//
//   step 0:      S(0) = Q K(0)^T | wait | release K(0) | softmax S(0) -> P(0)
//   step t > 0:  S(t) = Q K(t)^T, O += P(t-1) V(t-1)              (one batch, then)
//                wait for S(t) | release K(t) | mask, softmax S(t) (new max, correction c)
//                wait for O | release V(t-1) | O *= c | P(t) = bf16(exp S(t))
//   step N:      O += P(N-1) V(N-1) | wait | release V(N-1)
//
// The correction of S(t)'s max applies to O after P(t-1) V(t-1) has been added, which is right:
// that product used weights relative to the old max, as did everything before it. P(t) is
// written only after the wgmma that reads P(t-1) has completed (registers an in-flight wgmma
// reads must not change), and S(t) has registers of its own: the live set is O + P + S (64 + 32 +
// 64 at head_dim 128).
//
// Ping-pong between the two consumers (FA3's warp scheduler barriers): a consumer issues a batch
// only after the other has issued its previous one, so the tensor cores run one warpgroup's
// batch while the other does its softmax. This is the overlap that the SASS keeps: ptxas (CUDA
// 13.0) schedules the wait for O += P(t-1) V(t-1) right after the row maxima of S(t), ahead of the
// exponentials, so within one warpgroup only the maxima overlap that product. (A predicated wait
// to pin it later made ptxas serialise every wgmma, C7514.) Named barrier
// 1 + c is consumer c's turn: c waits on it, then issues, then arrives on the other's. Both
// consumers therefore take the same number of steps: every KV tile of the CTA, the tiles past
// a consumer's last visible key masked entirely (zero weights and a correction of exactly 1:
// no bit of its rows changes). Consumer 0 opens the first turn itself and closes the last.
//
// Tiles from the consumer's num_full_kv_tiles on are masked per row (prefill_rows_span).
//
// After each wait for a full barrier, fence_proxy_async() orders the copies it announced
// (cp.async writes, generic proxy) before this thread's wgmma reads of them (async proxy).
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/sm90a/barriers.cuh"
#include "backend/cuda/sm90a/prefill_smem.cuh"
#include "backend/cuda/sm90a/prefill_wg_math.cuh"
#include "backend/cuda/sm90a/wgmma.cuh"
#include "backend/cuda/sm90a/wgmma_layout.h"

namespace se::cuda::sm90a {

inline constexpr int kTurnBarrier = 1;  // named barriers 1 and 2: the consumers' turns
inline constexpr int kTurnThreads = kConsumers * kWarpgroupThreads;
static_assert(kConsumers == 2, "the turns alternate between two consumers");

// Waits for this consumer's turn to issue a batch of wgmmas; pass_turn() hands it to the other.
__device__ __forceinline__ void wait_turn(int consumer) {
    named_barrier_sync(kTurnBarrier + consumer, kTurnThreads);
}
__device__ __forceinline__ void pass_turn(int consumer) {
    named_barrier_arrive(kTurnBarrier + (1 - consumer), kTurnThreads);
}

constexpr float kLog2e = 1.4426950408889634f;

// `consumer` in [0, kConsumers): which 64 rows of the CTA.
template <int kHeadDim>
__device__ __forceinline__ void run_consumer(const PrefillAttentionParams& p,
                                             const PrefillSmem<kHeadDim>& s, const CtaWork& w,
                                             int consumer) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int warp = static_cast<int>(threadIdx.x / 32) % 4;
    const int first_row = consumer * kWgmmaGroupRows;
    // Rows past num_rows (computed, never stored) see keys up to the CTA's end_key - 1, so a
    // consumer without rows of the sequence still has finite scores in every tile.
    const int32_t num_full_tiles =
        prefill_rows_span(w.range, first_row, kWgmmaGroupRows, w.group, w.prefix, kWgmmaTileKeys)
            .num_full_kv_tiles;
    int32_t last_key[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = first_row + warp * 16 + lane / 4 + 8 * h;
        last_key[h] = w.range.last_key(w.range.first_row + row, w.group, w.prefix);
    }
    const float scale_log2 = p.scale * kLog2e;
    const uint64_t q_desc = k_major_desc(s.q() + first_row * kRowBytes);

    OutAcc<kHeadDim> o;
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
    RowState row_max = {-INFINITY, -INFINITY};
    RowState row_sum = {0.0f, 0.0f};
    const int32_t num_tiles = w.range.num_kv_tiles;

    if (consumer == 0) named_barrier_arrive(kTurnBarrier, kTurnThreads);  // its own: it goes first
    if (num_tiles > 0) {
        Scores sc;
        Weights pw;
        RowState correction;
        mbarrier_wait(s.q_full(), 0);
        mbarrier_wait(s.k_full(0), full_parity(0));
        fence_proxy_async();
        wait_turn(consumer);
        wgmma_fence();
        issue_qk<kHeadDim>(sc, q_desc, k_major_desc(s.k(0)));
        wgmma_commit();
        pass_turn(consumer);
        wgmma_wait<0>();
        fence_operands(sc);
        mbarrier_arrive(s.k_empty(0));
        if (num_full_tiles == 0) mask_scores(sc, 0, last_key);
        softmax_scores(sc, row_max, row_sum, scale_log2, correction);
        scores_to_weights(sc, pw);

#pragma unroll 1
        for (int32_t t = 1; t < num_tiles; ++t) {
            const int stage = stage_of(t);
            const int prev = stage_of(t - 1);
            // V(t - 1) landed long ago (right after K(t - 1)); waiting for it here lets both
            // products go out back to back under one wgmma fence (and one proxy fence).
            mbarrier_wait(s.k_full(stage), full_parity(t));
            mbarrier_wait(s.v_full(prev), full_parity(t - 1));
            fence_proxy_async();
            fence_operands(o);
            fence_operands(pw);
            wait_turn(consumer);
            wgmma_fence();
            issue_qk<kHeadDim>(sc, q_desc, k_major_desc(s.k(stage)));
            wgmma_commit();
            issue_pv<kHeadDim>(o, pw, mn_major_desc<kTileRows>(s.v(prev)));
            wgmma_commit();
            pass_turn(consumer);

            wgmma_wait<1>();  // S(t) is done; P(t - 1) V(t - 1) may still run
            fence_operands(sc);
            mbarrier_arrive(s.k_empty(stage));
            if (t >= num_full_tiles) mask_scores(sc, t * kWgmmaTileKeys, last_key);
            softmax_scores(sc, row_max, row_sum, scale_log2, correction);

            wgmma_wait<0>();
            fence_operands(o);
            fence_operands(pw);
            mbarrier_arrive(s.v_empty(prev));
            rescale_out<kHeadDim>(o, correction);
            scores_to_weights(sc, pw);
        }

        const int32_t last = num_tiles - 1;
        mbarrier_wait(s.v_full(stage_of(last)), full_parity(last));
        fence_proxy_async();
        fence_operands(o);
        fence_operands(pw);
        wait_turn(consumer);
        wgmma_fence();
        issue_pv<kHeadDim>(o, pw, mn_major_desc<kTileRows>(s.v(stage_of(last))));
        wgmma_commit();
        pass_turn(consumer);
        wgmma_wait<0>();
        fence_operands(o);
        mbarrier_arrive(s.v_empty(stage_of(last)));
    }
    // Consumer 1's last pass_turn, or consumer 0's own opening one when there was no tile.
    if (consumer == 0) wait_turn(0);
    store_rows<kHeadDim>(p, w, first_row, o, row_sum);
}

}  // namespace se::cuda::sm90a
