// The pieces both GEMV schedules share (gemv.cu: one CTA per 16-row tile; gemv_split.cu: one CTA
// per SM over an equal share of every tile's k): the loads, a warp's accumulation over a range of
// a tile's quads, and the sum of the warps' partial tiles.
//
// Fragments (gemv.cu has the picture): lane (g, t) of a warp (lane = 4g + t) loads 8 consecutive
// elements P..P+7 of weight rows g and g + 8 and of x row g, P = 32q + 8t for quad q, and hands
// them to two mma.m16n8k16 as they are; the accumulator's (row g, cols 2t..2t+1) and (row g + 8,
// cols 2t..2t+1) are outputs (weight row, x row).
#pragma once

#include <cstdint>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda::gemv_detail {

inline constexpr int kTileRows = 16;   // weight rows per tile: the MMA's M
inline constexpr int kQuadElems = 32;  // elements of one weight row a 4-lane group loads at once
inline constexpr int kUnroll = 4;      // quads each warp has in flight
inline constexpr int64_t kMaxK = int64_t{1} << 30;  // keeps element offsets in int32
// Threads that own one (x row, tile row) output each when a tile is stored.
inline constexpr int kStoreThreads = kTileRows * kGemvMaxRows;

// The first tile of each segment; unused segments start at the total, so that a tile's segment
// is the last one whose start it has reached.
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

// 16 bytes of x through L1 (every warp of the SM reads the same x), or zeros where !valid.
__device__ __forceinline__ uint4 load_cached(const bf16* src, bool valid) {
    uint4 v;
    asm("{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, 0;\n"
        "  mov.b32 %1, 0;\n"
        "  mov.b32 %2, 0;\n"
        "  mov.b32 %3, 0;\n"
        "  @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        "}\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(src), "r"(static_cast<int>(valid)));
    return v;
}

struct SegmentView {
    const bf16* w;
    void* y;
    int64_t n;
    int64_t ldy;
    bool y_f32;
};

// Segment `seg`, read field by field with constant indices so that the parameter struct is never
// copied to local memory.
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

// The segment of tile `tile` and the tile's first output feature in it (kFeatures per tile).
struct TilePlace {
    SegmentView s;
    int64_t row0;
};

template <int kFeatures>
__device__ __forceinline__ TilePlace place_tile(const GemvParams& p, const SegmentTiles& tiles,
                                                int32_t tile) {
    int seg = 0;
    int32_t seg_begin = 0;
#pragma unroll
    for (int i = 1; i < kGemvMaxSegments; ++i) {
        if (tile >= tiles.begin[i]) {
            seg = i;
            seg_begin = tiles.begin[i];
        }
    }
    return {segment_of(p, seg), int64_t{tile - seg_begin} * kFeatures};
}

// This lane's rows of a tile: weight rows g and g + 8 (or, gated, row g of gate and of up) and
// x rows g + 8h, each at the lane's 16 bytes of the first quad.
template <int kHalves>
struct TileLanes {
    const bf16* w_lo;
    const bf16* w_hi;
    const bf16* x_row[kHalves];
    bool has_x[kHalves];
};

template <int kHalves, bool kGated>
__device__ __forceinline__ TileLanes<kHalves> tile_lanes(const GemvParams& p, const TilePlace& at) {
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    // Rows past n load row n - 1 again (in bounds, results never stored), so that every lane
    // issues the same loads.
    const int64_t last = at.s.n - 1;
    const int64_t lo_row = at.row0 + g < last ? at.row0 + g : last;
    const int64_t hi_row = kGated ? lo_row : (at.row0 + g + 8 < last ? at.row0 + g + 8 : last);
    TileLanes<kHalves> l;
    l.w_lo = at.s.w + lo_row * p.k + t * kVecElems;
    l.w_hi = (kGated ? p.segments[1].w : at.s.w) + hi_row * p.k + t * kVecElems;
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
        l.has_x[h] = g + 8 * h < p.m;
        l.x_row[h] = p.x + (l.has_x[h] ? g + 8 * h : 0) * p.ldx + t * kVecElems;
    }
    return l;
}

// acc += this warp's share of quads [q_begin, q_end) of the tile: quads q_begin + warp, then
// every kWarps-th, kUnroll of them in flight.
template <int kHalves, int kWarps>
__device__ __forceinline__ void accumulate(float (&acc)[kHalves][4], const TileLanes<kHalves>& l,
                                           int q_begin, int q_end, int num_chunks) {
    const int t = threadIdx.x % 4;
    const int warp = threadIdx.x / 32;
    for (int q0 = q_begin + warp; q0 < q_end; q0 += kWarps * kUnroll) {
        uint4 lo[kUnroll];
        uint4 hi[kUnroll];
        uint4 xv[kHalves][kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int q = q0 + u * kWarps;
            const bool valid = q < q_end && q * 4 + t < num_chunks;
            const int off = q * kQuadElems;
            lo[u] = load_streamed(l.w_lo + off, valid);
            hi[u] = load_streamed(l.w_hi + off, valid);
#pragma unroll
            for (int h = 0; h < kHalves; ++h)
                xv[h][u] = load_cached(l.x_row[h] + off, valid && l.has_x[h]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
            for (int h = 0; h < kHalves; ++h) {
                mma_bf16_16816(acc[h], {lo[u].x, hi[u].x, lo[u].y, hi[u].y}, xv[h][u].x,
                               xv[h][u].y);
                mma_bf16_16816(acc[h], {lo[u].z, hi[u].z, lo[u].w, hi[u].w}, xv[h][u].z,
                               xv[h][u].w);
            }
        }
    }
}

// The warps' accumulators of one 16 x 16 output tile (acc[h] holds x rows 8h..8h+7), summed in
// warp order. Thread e < kStoreThreads owns x row col = e / 16 and tile row r = e % 16.
template <int kHalves, int kWarps>
class WarpSums {
  public:
    // f32 [warp, half * 4 + accumulator register, lane], in shared memory
    using Buffer = float[kWarps][kHalves * 4][32];

    // Every thread of the CTA calls it (a barrier).
    __device__ __forceinline__ WarpSums(Buffer& partial, const float (&acc)[kHalves][4])
        : partial_(partial) {
        const int lane = threadIdx.x % 32;
        const int warp = threadIdx.x / 32;
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
#pragma unroll
            for (int i = 0; i < 4; ++i) partial_[warp][h * 4 + i][lane] = acc[h][i];
        }
        __syncthreads();
    }

    // The sum of (x row col, tile row tile_row); col < kHalves * 8.
    __device__ __forceinline__ float sum(int col, int tile_row) const {
        // The C fragment holds (row g, col 2t + j) in register j and (row g + 8, col 2t + j) in
        // 2 + j.
        const int src_lane = (tile_row % 8) * 4 + (col % 8) / 2;
        const int src_reg = (col / 8) * 4 + (tile_row / 8) * 2 + col % 2;
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) total += partial_[w][src_reg][src_lane];
        return total;
    }

  private:
    Buffer& partial_;
};

// silu_mul's arithmetic on the two projections as they would be stored (bf16), so that the fused
// launch gives the bits of gemv + silu_mul.
__device__ __forceinline__ bf16 silu_mul_of(float gate_sum, float up_sum) {
    const float g = __bfloat162float(__float2bfloat16_rn(gate_sum));
    const float u = __bfloat162float(__float2bfloat16_rn(up_sum));
    return __float2bfloat16_rn(g / (1.0f + expf(-g)) * u);
}

// y[col, row] = value in the segment's dtype.
__device__ __forceinline__ void store_y(const SegmentView& s, int col, int64_t row, float value) {
    const int64_t at = int64_t{col} * s.ldy + row;
    if (s.y_f32) {
        static_cast<float*>(s.y)[at] = value;
    } else {
        static_cast<bf16*>(s.y)[at] = __float2bfloat16_rn(value);
    }
}

}  // namespace se::cuda::gemv_detail
