// The decode GEMV on the tensor cores: a CTA owns 16 rows of one segment's weight, its 8 warps
// split k, and every warp feeds mma.m16n8k16 straight from 16-byte global loads (the weight is
// the A operand, x^T the B operand, whose 8 columns are up to 8 rows of x; a second B operand
// takes rows 8..15 where there are more than 8).
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
// Bytes in flight: each lane has kUnroll * 2 weight loads of 16 bytes outstanding, 4 KB per warp;
// at two or three CTAs of 8 warps per SM that is 64-96 KB per SM, well over the ~35 KB that
// Little's law asks of 4.8 TB/s at ~1 us of loaded latency. x (at most 8 rows) is read through
// L1, where the CTAs of one SM sweeping k together share it; the weight bypasses L1.
//
// Launched as a programmatic dependent launch (pdl.cuh): a CTA's start-up and address arithmetic
// overlap the previous kernel's end. Asking L2 for the first rounds' weights before pdl_wait()
// was measured and made every shape slower (H200, 2026-12-01: gate|up 57 -> 69 us, down 39 -> 41,
// LM head 249 -> 287 at m = 1 with per-lane L2 prefetches of two rounds; bulk prefetches of 4 or
// 16 KB per row lost too; batch-1 decode steps 4.53 -> 4.92-5.77 ms), so the weights stream only
// on demand.
//
// Launches with few tiles (q|k|v, o and down: 256-384 tiles for 132 SMs) leave SMs idle in the
// tail of their single wave; they run the split schedule instead (gemv_split.cu).
//
// kSiluMul (the gated MLP): a CTA takes 8 rows of gate as the MMA's rows g and 8 rows of up, the
// same output features, as its rows g + 8, so one thread ends with both sums of a feature and
// writes silu(gate) * up: the two products and silu_mul in one launch, with the same roundings.
#include <climits>
#include <string>
#include <string_view>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_split.h"
#include "backend/cuda/gemv_tile.cuh"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"

namespace se::cuda {
namespace {

using namespace gemv_detail;

constexpr std::string_view kName = "gemv";
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
static_assert(kStoreThreads == kThreads);

// Sums the warps' accumulators of the CTA's tile and stores the used part: thread e owns x row
// e / 16 and tile row e % 16, so neighbouring threads write neighbouring y. With kSiluMul tile
// rows 0..7 are gate and 8..15 up of output features row0 + (0..7); the threads of rows 0..7
// write both.
template <int kHalves, GemvEpilogue kEpilogue>
__device__ __forceinline__ void store_tile(const float (&acc)[kHalves][4], const TilePlace& at,
                                           int32_t m) {
    __shared__ typename WarpSums<kHalves, kWarps>::Buffer partial;
    const WarpSums<kHalves, kWarps> sums(partial, acc);
    const int col = static_cast<int>(threadIdx.x) / kTileRows;  // x row
    const int r = static_cast<int>(threadIdx.x) % kTileRows;    // row within the tile
    if (col >= m || col >= kHalves * 8) return;
    const int64_t row = at.row0 + r;
    if constexpr (kEpilogue == GemvEpilogue::kSiluMul) {
        if (r >= kTileRows / 2 || row >= at.s.n) return;
        static_cast<bf16*>(at.s.y)[int64_t{col} * at.s.ldy + row] =
            silu_mul_of(sums.sum(col, r), sums.sum(col, r + 8));
    } else {
        if (row >= at.s.n) return;
        store_y(at.s, col, row, sums.sum(col, r));
    }
}

// kHalves = 1: up to 8 rows of x; 2: up to 16, the second half a second B operand of the same
// weight fragments (the weight still streams once).
template <int kHalves, GemvEpilogue kEpilogue>
__global__ void __launch_bounds__(kThreads, 4 - kHalves)
    gemv_kernel(GemvParams p, SegmentTiles tiles) {
    pdl_launch_dependents();
    constexpr bool kGated = kEpilogue == GemvEpilogue::kSiluMul;
    // Output features of a tile: 16 rows of one weight, or 8 of gate and the same 8 of up.
    constexpr int kFeatures = kGated ? kTileRows / 2 : kTileRows;
    const TilePlace at = place_tile<kFeatures>(p, tiles, static_cast<int32_t>(blockIdx.x));
    const TileLanes<kHalves> lanes = tile_lanes<kHalves, kGated>(p, at);
    const int num_chunks = static_cast<int>(p.k / kVecElems);  // 16-byte chunks per row
    pdl_wait();                                                // x is the previous kernel's output
    float acc[kHalves][4] = {};
    accumulate<kHalves, kWarps>(acc, lanes, 0, (num_chunks + 3) / 4, num_chunks);
    store_tile<kHalves, kEpilogue>(acc, at, p.m);
}

Status field_error(const std::string& field, const std::string& what) {
    return invalid_argument(std::string(kName) + ": " + field + " " + what);
}

// writes_y: false for up of kSiluMul, whose y is never written (and may be null).
Status check_segment(const GemvSegment& s, int index, bool writes_y) {
    const std::string name = "segments[" + std::to_string(index) + "]";
    if (s.n < 0) return field_error(name + ".n", "is " + std::to_string(s.n));
    if (s.n == 0) return Status::ok_status();
    if (s.w == nullptr) return field_error(name + ".w", "is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, name + ".w", s.w));
    if (!writes_y) return Status::ok_status();
    if (s.y == nullptr) return field_error(name + ".y", "is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, name + ".y", s.y));
    if (s.ldy < s.n) {
        return field_error(name + ".ldy", std::to_string(s.ldy) + " < n " + std::to_string(s.n));
    }
    if (s.y_dtype != DType::kBF16 && s.y_dtype != DType::kF32) {
        return field_error(name + ".y_dtype",
                           "is " + std::string(dtype_name(s.y_dtype)) + ", not bf16 or f32");
    }
    return Status::ok_status();
}

Status check_params(const GemvParams& p) {
    if (p.m < 1 || p.m > kGemvMaxRows) {
        return field_error("m", "is " + std::to_string(p.m) + ", not in [1, " +
                                    std::to_string(kGemvMaxRows) + "]");
    }
    if (p.k <= 0 || p.k > kMaxK) {
        return field_error("k", "is " + std::to_string(p.k) + ", not in [8, 2^30]");
    }
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "k", p.k));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "ldx", p.ldx));
    if (p.ldx < p.k) {
        return field_error("ldx", std::to_string(p.ldx) + " < k " + std::to_string(p.k));
    }
    if (p.x == nullptr) return field_error("x", "is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, "x", p.x));
    if (p.num_segments < 1 || p.num_segments > kGemvMaxSegments) {
        return field_error("num_segments", "is " + std::to_string(p.num_segments) +
                                               ", not in [1, " + std::to_string(kGemvMaxSegments) +
                                               "]");
    }
    const bool gated = p.epilogue == GemvEpilogue::kSiluMul;
    for (int i = 0; i < p.num_segments; ++i) {
        SE_RETURN_IF_ERROR(check_segment(p.segments[i], i, !gated || i == 0));
    }
    if (!gated) return Status::ok_status();
    if (p.num_segments != 2) {
        return field_error("num_segments",
                           "is " + std::to_string(p.num_segments) + ", kSiluMul takes gate and up");
    }
    if (p.segments[1].n != p.segments[0].n) {
        return field_error("segments[1].n", std::to_string(p.segments[1].n) + " != gate's " +
                                                std::to_string(p.segments[0].n));
    }
    if (p.segments[0].y_dtype != DType::kBF16) {
        return field_error("segments[0].y_dtype", "is not bf16 (kSiluMul writes activations)");
    }
    return Status::ok_status();
}

template <int kHalves, GemvEpilogue kEpilogue>
Status launch(const GemvParams& p, const SegmentTiles& tiles, int64_t num_tiles,
              cudaStream_t stream) {
    return cuda_status(
        launch_pdl(gemv_kernel<kHalves, kEpilogue>, dim3(static_cast<unsigned>(num_tiles)),
                   dim3(kThreads), 0, stream, p, tiles),
        kName);
}

}  // namespace

Status gemv(const GemvParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_params(p));
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
        if (num_tiles > INT32_MAX) return field_error("segments", "have over 2^35 rows in all");
    }
    // Unused segments start at the total: no CTA reaches them.
    for (int i = p.num_segments; i < kGemvMaxSegments; ++i) {
        tiles.begin[i] = static_cast<int32_t>(num_tiles);
    }
    if (num_tiles == 0) return Status::ok_status();
    if (use_split(p, num_tiles)) {
        return launch_split(p, tiles, static_cast<int32_t>(num_tiles), stream);
    }
    if (gated) {
        return p.m <= 8 ? launch<1, GemvEpilogue::kSiluMul>(p, tiles, num_tiles, stream)
                        : launch<2, GemvEpilogue::kSiluMul>(p, tiles, num_tiles, stream);
    }
    return p.m <= 8 ? launch<1, GemvEpilogue::kStore>(p, tiles, num_tiles, stream)
                    : launch<2, GemvEpilogue::kStore>(p, tiles, num_tiles, stream);
}

}  // namespace se::cuda
