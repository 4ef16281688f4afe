// The overlapped consumer warpgroup of the wgmma prefill kernel (the kOverlap and kOverlapTma
// variants of prefill_attention_sm90a.cu): the math of prefill_consumer.cuh (same products, same
// masks, same softmax, bit for bit the same per tile), scheduled so that a warpgroup's own P V
// runs under its own exponentials (FlashAttention-3's intra-warpgroup overlap), on top of the
// ping-pong between the two consumers.
//
// Why the ping-pong consumer does not overlap within a warpgroup: it waits for O += P(t-1) V(t-1)
// after the softmax of S(t), but ptxas moves that wait above the exponentials, to interleave the
// O rescale (64 FMULs that need O) and the bf16 packing of P(t) (which overwrites the registers
// P(t-1) V(t-1) reads) with the MUFU work. Here neither needs that product in the same step:
//
//   step 0:      S(0) = Q K(0)^T | wait | release K(0) | softmax S(0) -> P(0) in p[0]
//   step t > 0:  issue S(t) = Q K(t)^T                       (pending: PV(t-2), S(t))
//                wait<1>: PV(t-2) done | release V(t-2) | O *= c(t-1)
//                issue O += P(t-1) V(t-1) from p[(t-1) % 2]   (pending: S(t), PV(t-1))
//                wait<1>: S(t) done | release K(t) | mask, softmax S(t) -> P(t) in p[t % 2], c(t)
//   last:        wait<0>: PV(N-2) done | release V(N-2) | O *= c(N-1)
//                issue O += P(N-1) V(N-1) | wait<0> | release V(N-1)
//
// c(t) = exp2((m(t-1) - m(t)) * scale log2 e) is the correction of S(t)'s softmax: O holds the
// products up to tile t-2 relative to m(t-2) when step t scales it by c(t-1), so it is relative
// to m(t-1), the max P(t-1) was taken against, before P(t-1) V(t-1) is added (the order of the
// ping-pong consumer, which scales after adding P(t-1) V(t-1) by c(t): the same products, summed
// in the same order, scaled by the same factors, so the same bits). P is double-buffered: P(t)
// is written while P(t-1) V(t-1), which reads the other buffer, runs. Nothing between the
// exponentials of S(t) and the next issue of S(t+1) touches O or p[(t-1) % 2], and S(t+1)
// overwrites the registers the packing of P(t) reads, so ptxas has to keep the order above; the
// wait for P(t-1) V(t-1) comes after the next wgmma issue, where it cannot move. The loop is
// unrolled by two so that p[] is indexed by constants only (registers, not local memory).
//
// Live registers at head_dim 128: O 64 + S 64 + P 2 x 32 = 192 of the 232 (prefill_attention
// _sm90a.cu); at 64, 32 + 64 + 64.
//
// V ring (prefill_smem.cuh): V(t) is released two steps after its tile's S(t) (at step t + 2,
// after S(t+2) is issued), one step later than in the ping-pong consumer, so its ring has 3
// slots: V(t+3), which reuses the slot, is needed at step t+4, and its copy may start at step
// t+2; with 2 slots, V(t+2) would have one step to land, and the producer issues K(t+3) only
// after V(t+2). The K ring keeps 2 slots (K(t) is released within step t).
//
// Barrier phases, per ring slot (ring_slot / ring_full_parity / ring_empty_parity): tile t of a
// ring of depth D is use u = t / D of slot t % D; consumers wait on full(slot) with parity u & 1
// and arrive on empty(slot) once per use; the producer waits on empty(slot) with parity
// (u & 1) ^ 1 before each use. Every thread of both consumers arrives on every empty barrier of
// every tile exactly once (K(t) in step t; V(t) in step t+2, or in the last step for the last two
// tiles), so each empty barrier's count (256) completes each phase. Turns (named barriers 1, 2):
// each consumer takes num_tiles + 1 turns (step 0, steps 1..N-1, the last P V), the same number
// for both, as in the ping-pong consumer; consumer 0 opens the first turn itself and closes the
// last.
//
// Proxy fences: after waiting for a tile that came by cp.async (Q always; K/V tiles from
// w.first_copied_tile on, every tile without TMA), fence_proxy_async() orders the copies before
// this thread's wgmma reads of them. TMA tiles need none (tma.cuh).
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/sm90a/barriers.cuh"
#include "backend/cuda/sm90a/prefill_consumer.cuh"
#include "backend/cuda/sm90a/prefill_smem.cuh"
#include "backend/cuda/sm90a/prefill_wg_math.cuh"
#include "backend/cuda/sm90a/wgmma.cuh"
#include "backend/cuda/sm90a/wgmma_layout.h"

namespace se::cuda::sm90a {

// What one overlapped consumer knows about its share of the CTA (scalars). Smem is a
// PrefillSmem.
template <class Smem>
struct OverlapCtx {
    Smem s;
    uint64_t q_desc;            // this warpgroup's first Q row
    int consumer;               // which 64 rows of the CTA, in [0, kConsumers)
    int32_t num_tiles;          // KV tiles of the CTA (the same for both consumers)
    int32_t num_full_tiles;     // tiles below this are unmasked for every row of this consumer
    int32_t first_copied_tile;  // tiles from here on came by cp.async: proxy fence first
    int32_t last_key[2];        // of this thread's rows g and g + 8
    float scale_log2;           // scale * log2 e
};

// The registers one consumer carries across the KV loop.
template <int kHeadDim>
struct OverlapRegs {
    OutAcc<kHeadDim> o;
    Scores s;
    Weights p[2];  // P(t) in p[t % 2]
    RowState row_max;
    RowState row_sum;
    RowState correction;  // c(t) of the latest softmax
};

template <class Smem>
__device__ __forceinline__ void fence_if_copied(const OverlapCtx<Smem>& c, int32_t tile) {
    if (tile >= c.first_copied_tile) fence_proxy_async();
}

// Mask (tiles from num_full_tiles on), softmax and pack S(t) into p[kBuf]: the ping-pong
// consumer's arithmetic, in the same order.
template <int kHeadDim, int kBuf, class Smem>
__device__ __forceinline__ void overlap_softmax(const OverlapCtx<Smem>& c, int32_t t,
                                                OverlapRegs<kHeadDim>& r) {
    if (t >= c.num_full_tiles) mask_scores(r.s, t * kWgmmaTileKeys, c.last_key);
    softmax_scores(r.s, r.row_max, r.row_sum, c.scale_log2, r.correction);
    scores_to_weights(r.s, r.p[kBuf]);
}

template <int kHeadDim, class Smem>
__device__ __forceinline__ void overlap_first_step(const OverlapCtx<Smem>& c,
                                                   OverlapRegs<kHeadDim>& r) {
    mbarrier_wait(c.s.q_full(), 0);
    mbarrier_wait(c.s.k_full(0), ring_full_parity<Smem::kKStages>(0));
    fence_proxy_async();  // Q came by cp.async (and K(0) may have)
    wait_turn(c.consumer);
    wgmma_fence();
    issue_qk<kHeadDim>(r.s, c.q_desc, k_major_desc(c.s.k(0)));
    wgmma_commit();
    pass_turn(c.consumer);
    wgmma_wait<0>();
    fence_operands(r.s);
    mbarrier_arrive(c.s.k_empty(0));
    overlap_softmax<kHeadDim, 0>(c, 0, r);
}

// Step t in [1, num_tiles): P(t-1) is in p[1 - kBuf], P(t) goes to p[kBuf] (kBuf = t % 2).
template <int kHeadDim, int kBuf, class Smem>
__device__ __forceinline__ void overlap_step(const OverlapCtx<Smem>& c, int32_t t,
                                             OverlapRegs<kHeadDim>& r) {
    constexpr int kK = Smem::kKStages;
    constexpr int kV = Smem::kVStages;
    const int k_slot = ring_slot<kK>(t);
    const int v_slot = ring_slot<kV>(t - 1);
    // V(t - 1) was copied right after K(t - 1), before K(t): waiting for it here as well keeps
    // the mbarrier loops (branches) out of the turn.
    mbarrier_wait(c.s.k_full(k_slot), ring_full_parity<kK>(t));
    mbarrier_wait(c.s.v_full(v_slot), ring_full_parity<kV>(t - 1));
    fence_if_copied(c, t);  // covers V(t - 1) too: copied tiles are a suffix of the CTA's
    fence_operands(r.p[1 - kBuf]);
    wait_turn(c.consumer);
    wgmma_fence();
    issue_qk<kHeadDim>(r.s, c.q_desc, k_major_desc(c.s.k(k_slot)));
    wgmma_commit();
    wgmma_wait<1>();  // P(t-2) V(t-2) of the last step (nothing at t = 1); S(t) may run on
    fence_operands(r.o);
    if (t >= 2) mbarrier_arrive(c.s.v_empty(ring_slot<kV>(t - 2)));
    rescale_out<kHeadDim>(r.o, r.correction);
    fence_operands(r.o);
    wgmma_fence();  // O was written by the rescale
    issue_pv<kHeadDim>(r.o, r.p[1 - kBuf], mn_major_desc<kTileRows>(c.s.v(v_slot)));
    wgmma_commit();
    pass_turn(c.consumer);
    wgmma_wait<1>();  // S(t); P(t-1) V(t-1) runs on under the softmax
    fence_operands(r.s);
    mbarrier_arrive(c.s.k_empty(k_slot));
    overlap_softmax<kHeadDim, kBuf>(c, t, r);
}

// After the last step (tile N-1 = num_tiles - 1, its P in p[kBuf]): the last P V.
template <int kHeadDim, int kBuf, class Smem>
__device__ __forceinline__ void overlap_last_pv(const OverlapCtx<Smem>& c,
                                                OverlapRegs<kHeadDim>& r) {
    constexpr int kV = Smem::kVStages;
    const int32_t last = c.num_tiles - 1;
    wgmma_wait<0>();  // P(N-2) V(N-2), when N >= 2
    fence_operands(r.o);
    if (last >= 1) mbarrier_arrive(c.s.v_empty(ring_slot<kV>(last - 1)));
    rescale_out<kHeadDim>(r.o, r.correction);
    const int v_slot = ring_slot<kV>(last);
    mbarrier_wait(c.s.v_full(v_slot), ring_full_parity<kV>(last));
    fence_if_copied(c, last);
    fence_operands(r.o);
    fence_operands(r.p[kBuf]);
    wait_turn(c.consumer);
    wgmma_fence();
    issue_pv<kHeadDim>(r.o, r.p[kBuf], mn_major_desc<kTileRows>(c.s.v(v_slot)));
    wgmma_commit();
    pass_turn(c.consumer);
    wgmma_wait<0>();
    fence_operands(r.o);
    mbarrier_arrive(c.s.v_empty(v_slot));
}

// `consumer` in [0, kConsumers): which 64 rows of the CTA.
template <int kHeadDim, class Smem>
__device__ __forceinline__ void run_overlap_consumer(const PrefillAttentionParams& p, const Smem& s,
                                                     const CtaWork& w, int consumer) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int warp = static_cast<int>(threadIdx.x / 32) % 4;
    const int first_row = consumer * kWgmmaGroupRows;
    OverlapCtx<Smem> c;
    c.s = s;
    c.q_desc = k_major_desc(s.q() + first_row * kRowBytes);
    c.consumer = consumer;
    c.num_tiles = w.range.num_kv_tiles;
    // Rows past num_rows (computed, never stored) see keys up to the CTA's end_key - 1, so a
    // consumer without rows of the sequence still has finite scores in every tile.
    c.num_full_tiles =
        prefill_rows_span(w.range, first_row, kWgmmaGroupRows, w.group, w.prefix, kWgmmaTileKeys)
            .num_full_kv_tiles;
    c.first_copied_tile = w.first_copied_tile;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = first_row + warp * 16 + lane / 4 + 8 * h;
        c.last_key[h] = w.range.last_key(w.range.first_row + row, w.group, w.prefix);
    }
    c.scale_log2 = p.scale * kLog2e;

    OverlapRegs<kHeadDim> r;
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) r.o[i] = 0.0f;
    r.row_max[0] = r.row_max[1] = -INFINITY;
    r.row_sum[0] = r.row_sum[1] = 0.0f;

    if (consumer == 0) named_barrier_arrive(kTurnBarrier, kTurnThreads);  // its own: it goes first
    if (c.num_tiles > 0) {
        overlap_first_step<kHeadDim>(c, r);
        // One instance of each step in the loop (ptxas then keeps every accumulator in one place).
#pragma unroll 1
        for (int32_t t = 1;; t += 2) {
            if (t >= c.num_tiles) {
                overlap_last_pv<kHeadDim, 0>(c, r);
                break;
            }
            overlap_step<kHeadDim, 1>(c, t, r);
            if (t + 1 >= c.num_tiles) {
                overlap_last_pv<kHeadDim, 1>(c, r);
                break;
            }
            overlap_step<kHeadDim, 0>(c, t + 1, r);
        }
    }
    // Consumer 1's last pass_turn, or consumer 0's own opening one when there was no tile.
    if (consumer == 0) wait_turn(0);
    store_rows<kHeadDim>(p, w, first_row, r.o, r.row_sum);
}

}  // namespace se::cuda::sm90a
