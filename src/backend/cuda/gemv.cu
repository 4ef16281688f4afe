// The decode GEMV on the tensor cores: a CTA owns 16 rows of one segment's weight, its 8 warps
// split k (at one row of x: the rows, below), and every warp feeds mma.m16n8k16 straight from
// 16-byte global loads (the weight is the A operand, x^T the B operand, whose 8 columns are up to 8
// rows of x; a second B operand takes rows 8..15 where there are more than 8).
//
// A dot product does not care in which order k is summed, so the fragments need no shuffling:
// lane (g, t) of a warp (lane = 4g + t) loads 8 consecutive elements P..P+7 of weight rows g and
// g+8 and of x row g, where P = 32q + 8t for the warp's quad q of 32 elements, and hands them to
// two MMAs as they are:
//
//   weight row g   : | w0 w1 | w2 w3 | w4 w5 | w6 w7 |     (one 16-byte load: words 0..3)
//   weight row g+8 : | v0 v1 | v2 v3 | v4 v5 | v6 v7 |
//   x row g        : | x0 x1 | x2 x3 | x4 x5 | x6 x7 |
//   MMA 1: a = {w01, v01, w23, v23}, b = {x01, x23}   (logical k 2t..2t+1 -> P..P+1,
//                                                      2t+8..2t+9 -> P+2..P+3)
//   MMA 2: a = {w45, v45, w67, v67}, b = {x45, x67}
//
// Every lane maps logical k to physical k the same way for A and B, and the four lanes of a
// group cover the quad's 32 elements once, so the two MMAs add exactly the quad's products. The
// accumulator's (row g, cols 2t..2t+1) and (row g+8, cols 2t..2t+1) are outputs (weight row,
// x row); columns past m see x = 0 and are never stored.
//
// One load instruction of that layout (GemvLoads::kQuads) touches 8 rows, 64 bytes each. At one
// row of x the B operand's 8 columns are free, and a warp can read whole rows instead
// (GemvLoads::kRows): warp w owns tile rows w and w + 8 over all of k, and lane l loads chunk l
// (16 bytes) of each 256-element slice of both rows and of x, so that every instruction reads 512
// contiguous bytes of one row. Lane (g, t) then holds chunk 4g + t, and the MMAs' A row g is
// chunks 4g..4g+3 of row w (A row g + 8 the same of row w + 8) while B column g is the same
// chunks of x:
//
//   D[i][j] = sum_t  w(chunk 4i + t) . x(chunk 4j + t)     (over the slices of the loop)
//
// so the diagonal D[g][g] (and D[g + 8][g]) holds slice-chunk g's products and the rest is thrown
// away; the warp adds its 8 diagonal entries of each row with shuffles after the loop and leaves
// them where store_tile reads tile rows w and w + 8 of x row 0 (keep_diagonal). The bytes in
// flight and the loads per lane are those of kQuads; the MMAs (cheap at one row) do the
// rearranging. Batch-1 decode steps of an 8B model 5.467 -> 5.249 ms (H100, 2026-12-06,
// same call, greedy tokens unchanged); se_cuda_gemv_bench at m = 1 in that call: gate|up 78.1 ->
// 76.6 us, down 40.3 -> 39.7, q|k|v 18.2 -> 18.0, LM head 342.4 -> 335.5, o unchanged (12.7).
// (The eighteenth run's row-order loads at every m, with the fragments still needing a shuffle,
// lost: docs/benchmarks.md.)
//
// Bytes in flight: each lane has kUnroll * 2 weight loads of 16 bytes outstanding, 4 KB per warp;
// at two or three CTAs of 8 warps per SM that is 64-96 KB per SM, well over the ~35 KB that
// Little's law asks of 4.8 TB/s at ~1 us of loaded latency. x (at most 8 rows) is read through
// L1, where the CTAs of one SM sweeping k together share it; the weight bypasses L1. The o and
// down launches at one row of x are spaced to 2 CTAs an SM (below), 64 KB an SM, and under load
// the latency is longer than that: they keep kWideUnroll slices in flight (128 KB an SM, 128
// registers a thread). Batch-1 decode steps of an 8B model 5.133 -> 5.094 ms, and 5.072 with
// kResidualNorm's loads moved out of the epilogue (gemv_store.cuh's NormRow) (H100, 2026-12-07,
// same call, greedy tokens unchanged). Only kUnroll slices of a wide first round go out before the
// wait: all kWideUnroll there (16.8 MB for o and for down) took bandwidth from the kernel before
// (in an H100 timeline gate|up + SiLU 73.3 -> 75.5 us, the attention merge 3.8 -> 5.7), and
// batch-1 steps went 5.077 -> 5.059 ms with the rest issued right after the wait (same call).
//
// Launched as a programmatic dependent launch (pdl.cuh): a CTA's start-up and address arithmetic
// overlap the previous kernel's end. At up to 8 rows of x the first round of weight loads does
// too: it goes into the registers the first MMAs read (no extra traffic), and every later round
// is issued after the MMAs of the round before (H200, 2026-12-01, m = 1: o 11.2 -> 10.4 us, down
// 31.1 -> 29.4, q|k|v 14.4 -> 14.0; batch-1 decode steps 4.42 / 4.39 -> 4.33 / 4.34 ms), its x
// with it, so that no round's MMAs wait for an x load issued just before them. At 9..16
// rows the same loop was slower (gate|up + SiLU 61.4 -> 67.7 us, batch-16 steps 7.19 -> 7.62
// ms), so those load each round before its MMAs. Asking L2 for the first rounds' weights instead
// (prefetches, no registers) made every shape slower (gate|up 57 -> 69 us, down 39 -> 41, LM head
// 249 -> 287 at m = 1; batch-1 steps 4.53 -> 4.92-5.77 ms).
//
// A CTA lets the next kernel launch (pdl_launch_dependents) only after its loop, before its
// stores. At a CTA's start, a launch of one wave (q|k|v, o, down) would let the next kernel's CTAs
// in at once, to wait beside it for all of its time: the RMSNorm after o and down was resident
// 26 us for its 2-4 us of work, decode attention after q|k|v 81 us for 68. Batch-16 steps of an 8B
// model took 6.739 / 6.744 ms that way and 6.650 / 6.649 with the trigger after the loop (one
// call; 6.726 / 6.755 -> 6.646 / 6.634 in another), 6.682 / 6.708 with it after the stores;
// batch 1 did not change (4.14 -> 4.15, 4.12 -> 4.12) (H200, 2026-12-01). At up to 8 rows, where
// every round's weights are in flight before its MMAs, each warp also triggers as it starts its
// last round: the launch of a grid whose CTAs are all resident by then (the trigger counts once
// every CTA has given it) moves a round earlier, and the next kernel's CTAs take the slots of this
// one's finished CTAs sooner. Batch-1 steps of an 8B model 4.118 / 4.102 / 4.109 -> 4.096 / 4.093 /
// 4.094 ms interleaved, batch 4 4.249 -> 4.239 (H200, 2026-12-02). (At 9..16 rows the same line
// made the 3-CTA kernels spill, and was left out.)
//
// A launch of at most two waves and up to 8 rows of x (o and down of an 8B model at batch 1: 256
// tiles) asks for shared memory it never uses, so that no SM holds more than ceil(tiles / SMs) of
// its CTAs: launched early, they would otherwise pile into the slots that free first and leave
// SMs idle (gemv_occupancy.h).
//
// The epilogues (kSiluMul, kRopeStore, kResidualNorm) and the CTA's tile store: gemv_store.cuh.
#include <climits>
#include <string_view>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_check.h"
#include "backend/cuda/gemv_occupancy.h"
#include "backend/cuda/gemv_store.cuh"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/warp_mma.cuh"
#include "core/expected.h"

namespace se::cuda {
namespace {

constexpr std::string_view kName = "gemv";

using gemv_tile::kThreads;
using gemv_tile::kTileRows;
using gemv_tile::kWarps;
using gemv_tile::rope_rows;
using gemv_tile::RopeRows;
using gemv_tile::SegmentView;
using gemv_tile::static_smem_bytes;
using gemv_tile::store_tile;

constexpr int kUnroll = 4;  // slices each warp has in flight (quads, or 256 elements of rows)
// Slices in flight of the o and down launches at one row of x (kResidualNorm, at most two waves,
// so at most 2 CTAs an SM: 128 registers a thread): twice the bytes of kUnroll (see the top).
constexpr int kWideUnroll = 8;
constexpr int64_t kMaxCappedWaves = 2;  // launches of more waves place themselves evenly

// How a warp's lanes cover its weight rows (see the top of the file): kQuads, lane group g rows
// g and g + 8, 64 bytes of each per instruction, the warps splitting k (any m); kRows, warp w rows
// w and w + 8 over all of k, 512 contiguous bytes per instruction (m = 1 only).
enum class GemvLoads { kQuads, kRows };

// The first tile (CTA) of each segment; unused segments start at the total, so that a CTA's
// segment is the last one whose start it has reached.
struct SegmentTiles {
    int32_t begin[kGemvMaxSegments];
};

// 16 bytes of a weight that is read once, or zeros where !valid (nothing is read then): no L1
// allocation (x keeps L1 to itself), and a 256-byte L2 fetch, since the CTA's other warps want
// the neighbouring bytes of the same row next. A predicated load rather than a branch, so that a
// batch's loads all issue before the first MMA waits on one.
__device__ __forceinline__ uint4 load_streamed(const bf16* src, bool valid) {
    uint4 v;
    asm("{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, 0;\n"
        "  mov.b32 %1, 0;\n"
        "  mov.b32 %2, 0;\n"
        "  mov.b32 %3, 0;\n"
        "  @p ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        "}\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(src), "r"(static_cast<int>(valid)));
    return v;
}

// 16 bytes of x through L1 (every warp of the SM reads the same x), or zeros where !valid. x is
// the previous kernel's output, so this is a coherent load kept after pdl_wait(), not a read-only
// (.nc) one: the read-only path lets the compiler assume that nothing writes the data while the
// kernel runs, which a programmatic dependent launch breaks (its kernel starts before the previous
// one has written x), so nothing keeps such a load after the wait. With the first round of x
// loaded right after the wait through .nc, PdlChain.BackToBackLaunchesEqualHostOrderedLaunches
// failed at m = 1 (H200, 2026-12-01); with this load it passed 5 runs of 5, at the same speed
// (batch-1 steps 4.25 / 4.28 -> 4.27 / 4.28 ms, batch 16 6.75 / 6.75 -> 6.76 / 6.79).
__device__ __forceinline__ uint4 load_cached(const bf16* src, bool valid) {
    uint4 v;
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, 0;\n"
        "  mov.b32 %1, 0;\n"
        "  mov.b32 %2, 0;\n"
        "  mov.b32 %3, 0;\n"
        "  @p ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        "}\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(src), "r"(static_cast<int>(valid))
        : "memory");
    return v;
}

// An f32 that the previous kernel wrote (as load_cached), or 0 where !valid.
__device__ __forceinline__ float load_cached_f32(const float* src, bool valid) {
    float v;
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %2, 0;\n"
        "  mov.b32 %0, 0;\n"
        "  @p ld.global.f32 %0, [%1];\n"
        "}\n"
        : "=f"(v)
        : "l"(src), "r"(static_cast<int>(valid))
        : "memory");
    return v;
}

// The CTA's segment, read field by field with constant indices so that the parameter struct is
// never copied to local memory.
__device__ __forceinline__ SegmentView segment_of(const GemvParams& p, int seg) {
    SegmentView v{};
#pragma unroll
    for (int s = 0; s < kGemvMaxSegments; ++s) {
        if (s == seg) {
            v = {p.segments[s].w, p.segments[s].y, p.segments[s].n, p.segments[s].ldy,
                 p.segments[s].y_dtype == DType::kF32};
        }
    }
    return v;
}

// kRows: the warp's two row sums from its accumulators' diagonals (see the top of the file), put
// where store_tile reads tile rows `warp` and `warp` + 8 of x row 0 (lane 4 * warp, registers 0
// and 2) and zeros everywhere else, so that store_tile's sum over the warps adds only zeros to
// them. D[g][g] sits in lane (g, t = g / 2), register g % 2; D[g + 8][g] in register 2 + g % 2.
__device__ __forceinline__ void keep_diagonal(float (&acc)[4]) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int g = lane / 4;
    const bool on_diagonal = lane % 4 == g / 2;
    const bool odd = g % 2 != 0;
    float lo = on_diagonal ? (odd ? acc[1] : acc[0]) : 0.0f;
    float hi = on_diagonal ? (odd ? acc[3] : acc[2]) : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        lo += __shfl_xor_sync(0xffffffffu, lo, off);
        hi += __shfl_xor_sync(0xffffffffu, hi, off);
    }
    const bool mine = lane == 4 * warp;
    acc[0] = mine ? lo : 0.0f;
    acc[1] = 0.0f;
    acc[2] = mine ? hi : 0.0f;
    acc[3] = 0.0f;
}

// kHalves = 1: up to 8 rows of x; 2: up to 16, the second half a second B operand of the same
// weight fragments (the weight still streams once).
//
// kMinCtas: the CTAs per SM the registers must allow. At 3 ptxas fits both kHalves in 80
// registers without spills, which keeps 96 KB of weight loads in flight per SM. A launch of
// kHalves = 2 that fits in two CTAs per SM (o and down at m = 16: 256 tiles) is built for 2
// instead (108 registers): at 3 its CTAs pile unevenly into the slots that free first (H200,
// 2026-12-01, m = 16: down 33.4 -> 40.8 us, o 11.6 -> 14.2), and spacing them (below) costs the
// L1 that 16 rows of x need, while the launches of more tiles gain from 3 (q|k|v 17.2 -> 15.5 us,
// gate|up + SiLU 63.1 -> 61.4; batch-16 steps 7.28 -> 7.19 ms).
//
// kLoads: GemvLoads::kRows at one row of x (kHalves = 1), kQuads otherwise.
//
// kInFlight: the slices of a round (kUnroll; kWideUnroll for o and down at one row).
template <int kHalves, int kMinCtas, GemvEpilogue kEpilogue, GemvLoads kLoads,
          int kInFlight = kUnroll>
__global__ void __launch_bounds__(kThreads, kMinCtas)
    gemv_kernel(GemvParams p, SegmentTiles tiles) {
    constexpr bool kRows = kLoads == GemvLoads::kRows;
    static_assert(!kRows || kHalves == 1, "whole-row loads take one row of x");
    const int32_t tile = static_cast<int32_t>(blockIdx.x);
    int seg = 0;
    int32_t seg_begin = 0;
#pragma unroll
    for (int i = 1; i < kGemvMaxSegments; ++i) {
        if (tile >= tiles.begin[i]) {
            seg = i;
            seg_begin = tiles.begin[i];
        }
    }
    const SegmentView s = segment_of(p, seg);
    constexpr bool kGated = kEpilogue == GemvEpilogue::kSiluMul;
    // Output features of the tile: 16 rows of one weight, or 8 of gate and the same 8 of up.
    constexpr int kFeatures = kGated ? kTileRows / 2 : kTileRows;
    const int64_t row0 = int64_t{tile - seg_begin} * kFeatures;

    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int g = lane / 4;
    const int t = lane % 4;
    // The tile rows (pair, pair + 8) this lane loads, and its 16-byte chunk of each slice: a
    // slice is the part of a row that one load instruction of the warp covers (a quad of 32
    // elements for each lane group, or 256 elements of the warp's rows).
    const int pair = kRows ? warp : g;
    const int chunk = kRows ? lane : t;
    constexpr int kSliceChunks = kRows ? 32 : 4;
    constexpr int kSliceElems = kSliceChunks * kVecElems;
    // Slices between a round's loads, and the warp's first: warps split k (kQuads) or rows (kRows).
    constexpr int kSliceStep = kRows ? 1 : kWarps;
    constexpr int kRoundSlices = kSliceStep * kInFlight;
    const int first_slice = kRows ? 0 : warp;
    // Rows past n load row n - 1 again (in bounds, results never stored), so that every lane
    // issues the same loads.
    const int64_t last = s.n - 1;
    int64_t lo_row = row0 + pair < last ? row0 + pair : last;
    int64_t hi_row = kGated ? lo_row : (row0 + pair + 8 < last ? row0 + pair + 8 : last);
    if (kEpilogue == GemvEpilogue::kRopeStore && seg < 2) {  // q and k: pairs (n % 16 == 0)
        const RopeRows rows = rope_rows(p.rope, row0, pair);
        lo_row = rows.lo;
        hi_row = rows.hi;
    }
    const bf16* w_lo = s.w + lo_row * p.k + chunk * kVecElems;
    const bf16* w_hi = (kGated ? p.segments[1].w : s.w) + hi_row * p.k + chunk * kVecElems;
    const int num_chunks = static_cast<int>(p.k / kVecElems);  // 16-byte chunks per row
    const int num_slices = (num_chunks + kSliceChunks - 1) / kSliceChunks;

    uint4 lo[kInFlight];
    uint4 hi[kInFlight];
    // Slice q of the warp's weight rows into lo[u] and hi[u]; past the last slice nothing is read.
    const auto load_weights = [&](int q, int u) {
        const bool valid = q * kSliceChunks + chunk < num_chunks;  // also false for q >= num_slices
        lo[u] = load_streamed(w_lo + q * kSliceElems, valid);
        hi[u] = load_streamed(w_hi + q * kSliceElems, valid);
    };
    // A round is kInFlight slices, kSliceStep apart; the next round starts kRoundSlices on.
    // Slices [from, to) of the round at q0.
    const auto load_round = [&](int q0, int from = 0, int to = kInFlight) {
#pragma unroll
        for (int u = from; u < to; ++u) load_weights(q0 + u * kSliceStep, u);
    };
    // Whether the weight loads run a round ahead of the MMAs (see the top of the file).
    constexpr bool kLoadAhead = kHalves == 1;
    // The weights are no kernel's output: the first round streams while the previous one ends, at
    // most kUnroll slices of it (a wide round's other slices follow the wait: see the top).
    constexpr int kEarly = kInFlight < kUnroll ? kInFlight : kUnroll;
    if constexpr (kLoadAhead) load_round(first_slice, 0, kEarly);
    // kResidualNorm's row of the tile (threads 0..15): its norm weight (no kernel's output) now,
    // its residual (the previous o or down's) right after the wait, so that the epilogue waits
    // on no load of its own (gemv_store.cuh, NormRow).
    gemv_tile::NormRow norm_row{};
    const bool has_norm_row = threadIdx.x < kTileRows && row0 + threadIdx.x < s.n;
    if constexpr (kEpilogue == GemvEpilogue::kResidualNorm) {
        if (has_norm_row) norm_row.weight = __ldg(p.norm.weight + row0 + threadIdx.x);
    }

    // x is the previous kernel's output; the first round above is issued before the wait.
    pdl_wait_behind_loads(p.m - kGemvMaxRows);
    if constexpr (kLoadAhead) load_round(first_slice, kEarly, kInFlight);

    bool has_x[kHalves];
    const bf16* x_row[kHalves];
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
        // kRows: every lane reads x row 0 (m = 1), its own chunk of each slice.
        const int row = kRows ? 0 : g + 8 * h;
        has_x[h] = row < p.m;
        x_row[h] = p.x + (has_x[h] ? row : 0) * p.ldx + chunk * kVecElems;
    }
    uint4 xv[kHalves][kInFlight];
    // The x of slice q into xv[.][u] (zeros past the last slice and for rows past m).
    const auto load_x = [&](int q, int u) {
        const bool valid = q * kSliceChunks + chunk < num_chunks;
#pragma unroll
        for (int h = 0; h < kHalves; ++h)
            xv[h][u] = load_cached(x_row[h] + q * kSliceElems, valid && has_x[h]);
    };
    const auto load_x_round = [&](int q0) {
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) load_x(q0 + u * kSliceStep, u);
    };
    if constexpr (kLoadAhead) load_x_round(first_slice);
    if constexpr (kEpilogue == GemvEpilogue::kResidualNorm) {
        norm_row.residual = load_cached_f32(p.norm.residual + row0 + threadIdx.x, has_norm_row);
    }
    // x's pending row scale (m = 1): one entry of its sums of squares a thread, loaded now and
    // added up only after the loop (summing before it cost 0.25 ms a batch-1 step of an 8B model:
    // H200, 2026-12-04).
    float row_squares = 0.0f;
    if constexpr (kHalves == 1) {
        if (p.x_scale.sq_sums != nullptr) {
            const int64_t parts = gemv_norm_sums(p.k);
            row_squares = load_cached_f32(p.x_scale.sq_sums + threadIdx.x, threadIdx.x < parts);
        }
    }
    float acc[kHalves][4] = {};
    for (int q0 = first_slice; q0 < num_slices; q0 += kRoundSlices) {
        if constexpr (kLoadAhead) {
            if (q0 + kRoundSlices >= num_slices) pdl_launch_dependents();  // the last round
        }
        if constexpr (!kLoadAhead) {
#pragma unroll
            for (int u = 0; u < kInFlight; ++u) {
                load_weights(q0 + u * kSliceStep, u);
                load_x(q0 + u * kSliceStep, u);
            }
        }
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) {
#pragma unroll
            for (int h = 0; h < kHalves; ++h) {
                mma_bf16_16816(acc[h], {lo[u].x, hi[u].x, lo[u].y, hi[u].y}, xv[h][u].x,
                               xv[h][u].y);
                mma_bf16_16816(acc[h], {lo[u].z, hi[u].z, lo[u].w, hi[u].w}, xv[h][u].z,
                               xv[h][u].w);
            }
        }
        if constexpr (kLoadAhead) {
            load_round(q0 + kRoundSlices);
            load_x_round(q0 + kRoundSlices);
        }
    }
    if constexpr (kRows) keep_diagonal(acc[0]);
    // The next kernel launches once every CTA is past its loop (at up to 8 rows, in its last
    // round): its CTAs, resident early and waiting beside this grid, slowed it (see the top of the
    // file). A warp without slices triggers here.
    pdl_launch_dependents();
    store_tile<kHalves, kEpilogue>(acc, p, s, seg, row0, row_squares, norm_row);
}

// The dynamic shared memory (never used: it only spaces the CTAs) that keeps a launch of few
// tiles even over the SMs (gemv_occupancy.h); 0 for a launch of many, or without a device. Only
// launches of up to 8 rows of x are spaced: at 9..16 rows (two B operands) spacing measured
// slower (H200, 2026-12-01: down 33.4 -> 36.5 us and o 11.6 -> 12.5 us at m = 16, batch-16 decode
// steps 7.19 -> 7.68 ms), against down 39.4 -> 31.0 us and o 13.3 -> 11.1 us at m = 1 and batch-1
// steps 4.45 -> 4.37 ms. (Pinning the GEMV's preferred shared-memory carveout as well made
// batch-1 steps slower still: 4.78 ms at 50%, 5.56 ms at 100%.)
int64_t spacing_smem(int64_t num_tiles, int halves, const GemvDevice* device) {
    if (halves > 1 || device == nullptr) return 0;
    const int64_t cap = gemv_ctas_per_sm_cap(num_tiles, device->num_sms, kMaxCappedWaves);
    return gemv_dynamic_smem(cap, static_smem_bytes(halves), device->smem);
}

template <GemvEpilogue kEpilogue, GemvLoads kLoads, int kMinCtas = 3, int kInFlight = kUnroll>
Status allow_spacing(const SmSharedMemory& smem) {
    const int64_t most = smem.max_per_cta - static_smem_bytes(1);
    return cuda_status(
        cudaFuncSetAttribute(gemv_kernel<1, kMinCtas, kEpilogue, kLoads, kInFlight>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(most)),
        kName);
}

// The 9..16-row kernels read 16 rows of x through L1 (128 KB at k = 4096), which the CTAs of an
// SM share; the weight loads in flight take L1 lines too. Left to itself the driver gave these
// kernels a 64 KB carveout for their 2 or 3 CTAs' 8 KB of partial sums, and in gate|up + SiLU at
// m = 16 x hit L1 72% of the time (ncu: 67 MB of x from L2 against 235 MB of weight). The
// smallest carveout that holds the CTAs (32 KB) gives L1 32 KB more: 36 MB of x from L2, gate|up
// 60.4-61.3 -> 59.7-60.6 us, batch-16 decode steps of an 8B model 6.691 / 6.680 -> 6.658 / 6.628
// ms in one call and 6.636 / 6.612 -> 6.567 / 6.603 in another (H200, 2026-12-02). down reads
// 458 KB of x, which no L1 holds; it did not change.
template <int kMinCtas, GemvEpilogue kEpilogue>
Status prefer_l1(const SmSharedMemory& smem) {
    const auto kernel = gemv_kernel<2, kMinCtas, kEpilogue, GemvLoads::kQuads>;
    cudaFuncAttributes attributes{};
    SE_RETURN_IF_ERROR(cuda_status(cudaFuncGetAttributes(&attributes, kernel), kName));
    const int percent =
        gemv_carveout_percent(kMinCtas, static_cast<int64_t>(attributes.sharedSizeBytes), smem);
    return cuda_status(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent),
        kName);
}

template <GemvEpilogue kEpilogue>
Status configure(const SmSharedMemory& smem) {
    SE_RETURN_IF_ERROR((allow_spacing<kEpilogue, GemvLoads::kRows>(smem)));
    SE_RETURN_IF_ERROR((allow_spacing<kEpilogue, GemvLoads::kQuads>(smem)));
    SE_RETURN_IF_ERROR((prefer_l1<2, kEpilogue>(smem)));
    return prefer_l1<3, kEpilogue>(smem);
}

template <int kHalves, int kMinCtas, GemvEpilogue kEpilogue, GemvLoads kLoads = GemvLoads::kQuads,
          int kInFlight = kUnroll>
Status launch(const GemvParams& p, const SegmentTiles& tiles, int64_t num_tiles,
              cudaStream_t stream) {
    const int64_t smem = spacing_smem(num_tiles, kHalves, p.device);
    return cuda_status(launch_pdl(gemv_kernel<kHalves, kMinCtas, kEpilogue, kLoads, kInFlight>,
                                  dim3(static_cast<unsigned>(num_tiles)), dim3(kThreads),
                                  static_cast<size_t>(smem), stream, p, tiles),
                       kName);
}

// The kernel for p.m rows and num_tiles tiles (kMinCtas above; without a device, 3): whole-row
// loads at one row of x, quads at more; o and down at one row, spaced to at most 2 CTAs an SM,
// with kWideUnroll slices in flight.
template <GemvEpilogue kEpilogue>
Status launch_for(const GemvParams& p, const SegmentTiles& tiles, int64_t num_tiles,
                  cudaStream_t stream) {
    if constexpr (kEpilogue == GemvEpilogue::kResidualNorm) {
        if (p.m == 1 && p.device != nullptr &&
            gemv_ctas_per_sm_cap(num_tiles, p.device->num_sms, kMaxCappedWaves) > 0) {
            return launch<1, 2, kEpilogue, GemvLoads::kRows, kWideUnroll>(p, tiles, num_tiles,
                                                                          stream);
        }
    }
    if (p.m == 1) return launch<1, 3, kEpilogue, GemvLoads::kRows>(p, tiles, num_tiles, stream);
    if constexpr (kEpilogue == GemvEpilogue::kResidualNorm) {  // m = 1 only (checked)
        return invalid_argument("gemv: kResidualNorm takes one row of x");
    } else {
        if (p.m <= 8) return launch<1, 3, kEpilogue>(p, tiles, num_tiles, stream);
        if (p.device != nullptr && num_tiles <= 2 * p.device->num_sms) {
            return launch<2, 2, kEpilogue>(p, tiles, num_tiles, stream);
        }
        return launch<2, 3, kEpilogue>(p, tiles, num_tiles, stream);
    }
}

}  // namespace

Expected<GemvDevice> gemv_device() {
    int device = 0;
    SE_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    const auto attribute = [device](cudaDeviceAttr what) -> Expected<int64_t> {
        int value = 0;
        SE_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&value, what, device));
        return int64_t{value};
    };
    GemvDevice d;
    SE_ASSIGN_OR_RETURN(d.num_sms, attribute(cudaDevAttrMultiProcessorCount));
    SE_ASSIGN_OR_RETURN(d.smem.per_sm, attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
    SE_ASSIGN_OR_RETURN(d.smem.reserved_per_cta,
                        attribute(cudaDevAttrReservedSharedMemoryPerBlock));
    SE_ASSIGN_OR_RETURN(d.smem.max_per_cta, attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
    SE_RETURN_IF_ERROR(configure<GemvEpilogue::kStore>(d.smem));
    SE_RETURN_IF_ERROR(configure<GemvEpilogue::kSiluMul>(d.smem));
    SE_RETURN_IF_ERROR(configure<GemvEpilogue::kRopeStore>(d.smem));
    SE_RETURN_IF_ERROR((allow_spacing<GemvEpilogue::kResidualNorm, GemvLoads::kRows>(d.smem)));
    SE_RETURN_IF_ERROR(
        (allow_spacing<GemvEpilogue::kResidualNorm, GemvLoads::kRows, 2, kWideUnroll>(d.smem)));
    return d;
}

Status gemv(const GemvParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_gemv_params(p));
    SegmentTiles tiles{};
    int64_t num_tiles = 0;
    const bool gated = p.epilogue == GemvEpilogue::kSiluMul;
    for (int i = 0; i < kGemvMaxSegments; ++i) {
        tiles.begin[i] = static_cast<int32_t>(num_tiles);
        // A gated tile is 8 features of gate and up together; up adds no tiles of its own.
        if (i == 0 || (i < p.num_segments && !gated)) {
            const int64_t features = gated ? kTileRows / 2 : kTileRows;
            num_tiles += (p.segments[i].n + features - 1) / features;
        }
        if (num_tiles > INT32_MAX)
            return invalid_argument("gemv: segments have over 2^35 rows in all");
    }
    // Unused segments start at the total: no CTA reaches them.
    for (int i = p.num_segments; i < kGemvMaxSegments; ++i) {
        tiles.begin[i] = static_cast<int32_t>(num_tiles);
    }
    if (num_tiles == 0) return Status::ok_status();
    switch (p.epilogue) {
        case GemvEpilogue::kStore:
            return launch_for<GemvEpilogue::kStore>(p, tiles, num_tiles, stream);
        case GemvEpilogue::kSiluMul:
            return launch_for<GemvEpilogue::kSiluMul>(p, tiles, num_tiles, stream);
        case GemvEpilogue::kRopeStore:
            return launch_for<GemvEpilogue::kRopeStore>(p, tiles, num_tiles, stream);
        case GemvEpilogue::kResidualNorm:
            return launch_for<GemvEpilogue::kResidualNorm>(p, tiles, num_tiles, stream);
    }
    return invalid_argument("gemv: epilogue is unknown");
}

}  // namespace se::cuda
