// The decode GEMV's split schedule: one CTA of 16 warps per SM, each taking an equal share of the
// launch's work, counted in quads (32 elements of k) of 16-row tiles, so that no SM idles while
// others finish a last wave. q|k|v, o and down of an 8B model are 256-384 tiles: one CTA per
// tile leaves the 132 SMs with 2 or 3 tiles each and a ragged end (o and down measured 2.7 and
// 3.0-3.7 TB/s against 4.1 for the 1792 tiles of gate|up, H200, 2026-12-01).
//
// The work, flattened tile-major, and G CTAs (G = min(SMs, tiles)):
//
//   quads   | tile 0: 0 .. Q | tile 1: Q .. 2Q | tile 2 ... | tile T-1 |      F = T x Q
//   CTA c   [ c F / G ............... (c + 1) F / G )
//
// Each share is at least Q quads (T >= G), so it holds at most one tail of a tile at its start
// and one head at its end, and a tile is cut into at most two pieces, of two neighbouring CTAs:
// the low piece [0, x) and the high piece [x, Q). Whole tiles are stored as in gemv.cu. A piece
// stores its 16 x 16 partial sums in partials[tile][low or high], and the second of the two CTAs
// to arrive (an atomic counter per tile) stores y = low + high, always in that order, so the bits
// do not depend on which finished first; it then zeroes the counter for the next launch. The
// classic fence pattern orders it: every thread writes its partial, __threadfence(), barrier, one
// atomicAdd; the last arriver fences and reads both partials from L2 (ld.global.cg: L1 is not
// coherent across SMs).
//
// The CTA asks for more than half of an SM's shared memory (kHoldSmemBytes), so the scheduler
// places one per SM however the previous kernel's CTAs drain (a programmatic dependent launch,
// pdl.cuh, starts CTAs while they do). 16 warps x 32 lanes x 8 weight loads of 16 bytes keep 64 KB
// in flight per SM.
#include <algorithm>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/gemv_split.h"
#include "backend/cuda/pdl.cuh"

namespace se::cuda::gemv_detail {
namespace {

constexpr int kSplitWarps = 16;
constexpr int kSplitThreads = kSplitWarps * 32;
constexpr int kSplitBelowWaves = 4;  // tiles per SM under which the split schedule runs
// Dynamic shared memory a CTA takes only to keep a second one off its SM (228 KB per SM).
constexpr int kHoldSmemBytes = 120 * 1024;

enum class Piece { kWhole, kLow, kHigh };

template <int kHalves>
struct SplitShared {
    typename WarpSums<kHalves, kSplitWarps>::Buffer partial;
    int32_t arrived_before;  // thread 0's atomicAdd result, for the CTA
};

// Stores the CTA's piece of `tile` (quads [q_begin, q_end) of its Q), or, for the second piece of
// a cut tile to arrive, the whole tile's sum.
template <int kHalves>
__device__ __forceinline__ void store_piece(const GemvParams& p, const TilePlace& at, int32_t tile,
                                            Piece piece, const float (&acc)[kHalves][4],
                                            SplitShared<kHalves>& shared) {
    const WarpSums<kHalves, kSplitWarps> sums(shared.partial, acc);  // a barrier
    const int e = static_cast<int>(threadIdx.x);
    const int col = e / kTileRows;  // x row
    const int r = e % kTileRows;    // row within the tile
    const int64_t row = at.row0 + r;
    const bool owns = e < kStoreThreads && col < kHalves * 8;
    const bool stores = owns && col < p.m && row < at.s.n;
    const float value = owns ? sums.sum(col, r) : 0.0f;
    if (piece == Piece::kWhole) {
        if (stores) store_y(at.s, col, row, value);
        __syncthreads();  // the partial buffer is the next tile's
        return;
    }
    float* const low = p.split.partials + int64_t{tile} * 2 * kStoreThreads;
    float* const high = low + kStoreThreads;
    if (owns) (piece == Piece::kLow ? low : high)[e] = value;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        shared.arrived_before = atomicAdd(p.split.arrivals + tile, 1);
        // The second arrival is the last use of the counter in this launch.
        if (shared.arrived_before == 1) atomicExch(p.split.arrivals + tile, 0);
    }
    __syncthreads();
    if (shared.arrived_before == 1) {
        __threadfence();
        if (stores) store_y(at.s, col, row, __ldcg(low + e) + __ldcg(high + e));
    }
    __syncthreads();  // the partial buffer and arrived_before are the next tile's
}

template <int kHalves>
__global__ void __launch_bounds__(kSplitThreads, 1)
    gemv_split_kernel(GemvParams p, SegmentTiles tiles, int32_t num_tiles) {
    pdl_launch_dependents();
    __shared__ SplitShared<kHalves> shared;
    const int num_chunks = static_cast<int>(p.k / kVecElems);
    const int num_quads = (num_chunks + 3) / 4;  // Q
    const int64_t total = int64_t{num_tiles} * num_quads;
    int64_t f = int64_t{blockIdx.x} * total / gridDim.x;
    const int64_t end = (int64_t{blockIdx.x} + 1) * total / gridDim.x;
    pdl_wait();  // x is the previous kernel's output
    while (f < end) {
        const auto tile = static_cast<int32_t>(f / num_quads);
        const auto q_begin = static_cast<int>(f % num_quads);
        const int64_t left = end - f;
        const int q_end = left < num_quads - q_begin ? q_begin + static_cast<int>(left) : num_quads;
        const TilePlace at = place_tile<kTileRows>(p, tiles, tile);
        float acc[kHalves][4] = {};
        accumulate<kHalves, kSplitWarps>(acc, tile_lanes<kHalves, false>(p, at), q_begin, q_end,
                                         num_chunks);
        const Piece piece =
            q_begin > 0 ? Piece::kHigh : (q_end < num_quads ? Piece::kLow : Piece::kWhole);
        store_piece<kHalves>(p, at, tile, piece, acc, shared);
        f += q_end - q_begin;
    }
}

template <int kHalves>
Status launch(const GemvParams& p, const SegmentTiles& tiles, int32_t num_tiles,
              cudaStream_t stream) {
    const int32_t grid = std::min(p.split.num_sms, num_tiles);
    return cuda_status(launch_pdl(gemv_split_kernel<kHalves>, dim3(static_cast<unsigned>(grid)),
                                  dim3(kSplitThreads), kHoldSmemBytes, stream, p, tiles, num_tiles),
                       "gemv (split)");
}

}  // namespace

bool use_split(const GemvParams& p, int64_t num_tiles) {
    return p.epilogue == GemvEpilogue::kStore && p.split.num_sms > 0 &&
           p.split.partials != nullptr && p.split.arrivals != nullptr &&
           num_tiles <= kGemvSplitMaxTiles && num_tiles < kSplitBelowWaves * p.split.num_sms;
}

Status launch_split(const GemvParams& p, const SegmentTiles& tiles, int32_t num_tiles,
                    cudaStream_t stream) {
    return p.m <= 8 ? launch<1>(p, tiles, num_tiles, stream)
                    : launch<2>(p, tiles, num_tiles, stream);
}

}  // namespace se::cuda::gemv_detail

namespace se::cuda {

size_t gemv_split_workspace_bytes() {
    return size_t{kGemvSplitMaxTiles} *
           (2 * gemv_detail::kStoreThreads * sizeof(float) + sizeof(int32_t));
}

Status prepare_gemv_split() {
    for (const auto kernel :
         {gemv_detail::gemv_split_kernel<1>, gemv_detail::gemv_split_kernel<2>}) {
        SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, gemv_detail::kHoldSmemBytes));
    }
    return Status::ok_status();
}

}  // namespace se::cuda
