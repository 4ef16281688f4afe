// Gemv: the decode step's projections at a few rows, y = x · W^T, as one bandwidth-bound launch
// that may fill several outputs from one x (q, k and v; gate and up). cuBLASLt's GEMMs reach about
// 55% of HBM bandwidth at these shapes; this kernel streams each weight once with 16-byte loads
// and lets the tensor cores do the arithmetic (see gemv.cu for the layout).
//
// f32 accumulation, one rounding to the output dtype. x must not overlap any weight or output
// (CTAs still read x while others write their outputs).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "backend/cuda/gemv_occupancy.h"
#include "backend/cuda/host_device.h"
#include "backend/ops.h"
#include "core/dtype.h"
#include "core/expected.h"
#include "core/status.h"

namespace se::cuda {

inline constexpr int32_t kGemvMaxRows = 16;     // rows of x (tokens) one launch serves
inline constexpr int32_t kGemvMaxSegments = 3;  // weights one launch serves
inline constexpr int32_t kGemvTileRows = 16;    // weight rows per CTA: the MMA's M

// The sums of squares a kResidualNorm launch of n output rows writes (one a tile), which a
// GemvRowScale over k = n columns reads.
SE_HOST_DEVICE inline constexpr int64_t gemv_norm_sums(int64_t n) {
    return (n + kGemvTileRows - 1) / kGemvTileRows;
}

// One weight and where its outputs go.
struct GemvSegment {
    const bf16* w = nullptr;       // bf16 [n, k], row-major (a linear layer's [out, in])
    void* y = nullptr;             // y_dtype [m, ldy]; columns [0, n) written, the rest untouched
    int64_t n = 0;                 // rows of w (output features); 0 skips the segment
    int64_t ldy = 0;               // elements between rows of y, >= n
    DType y_dtype = DType::kBF16;  // kBF16 (activations) or kF32 (logits)
};

// What a launch writes. kSiluMul is the gated MLP's first half in one pass over gate and up:
// segments[0] is gate, segments[1] up (the same n), and segments[0].y receives
// silu(x · gate^T) * (x · up^T) in bf16, rounded as silu_mul of the two bf16 projections would
// be (segments[1].y is not written).
//
// kRopeStore is a decode step's attention input in one pass over q, k and v (segments 0, 1, 2):
// q and k rotated by RoPE over whole heads, q into segments[0].y, k and v into the paged cache
// (GemvRopeStore), with the bits of this launch with kStore followed by qk_norm_rope without
// norms and with its store (segments[1].y and segments[2].y are not written).
//
// kResidualNorm is a row-parallel projection (o, down) and the RMSNorm after it, at m = 1, in one
// segment: the product, rounded to bf16, is added to the f32 residual (GemvResidualNorm), and
// segments[0].y receives bf16(weight ⊙ residual), the normed row before its 1 / rms, which the
// next launch applies (GemvRowScale) from the sums of squares each CTA writes of its 16 rows.
enum class GemvEpilogue { kStore, kSiluMul, kRopeStore, kResidualNorm };

// Where kRopeStore's rotation and cache write take their inputs and put k and v.
struct GemvRopeStore {
    const int32_t* positions = nullptr;  // i32 [m]: each row's position
    const float* inv_freq = nullptr;     // f32 [head_dim / 2], scaling already applied
    const int64_t* slots = nullptr;      // i64 [m]: each row's cache entry; outside [0, num_slots)
                                         // nothing is stored for the row
    bf16* k_blocks = nullptr;            // bf16 [num_slots, segments[1].n]
    bf16* v_blocks = nullptr;            // bf16 [num_slots, segments[2].n]
    int64_t num_slots = 0;               // num_blocks * block_size
    int32_t head_dim = 0;                // a multiple of 16 dividing every segment's n
    RopeStyle style = RopeStyle::kNeox;  // rotary_dim = head_dim
};

// kResidualNorm's residual, norm weight and sums of squares.
struct GemvResidualNorm {
    float* residual = nullptr;      // f32 [segments[0].n]: += bf16(x · w^T), one f32 addition each
    const float* weight = nullptr;  // f32 [segments[0].n]: the norm's weight
    float* sq_sums = nullptr;       // f32 [gemv_norm_sums(n)]: entry i = the sum of the squares of
                                    // residual rows 16i .. 16i + 15, as updated
};

// x's pending 1 / rms (m = 1): every output sum is multiplied by
// 1 / sqrt(sum(sq_sums[0 .. gemv_norm_sums(k))) / k + eps) before the epilogue rounds it. sq_sums
// is what a kResidualNorm launch of n = k wrote with x. Null sq_sums: x is used as it is.
struct GemvRowScale {
    const float* sq_sums = nullptr;
    float eps = 0.0f;
};

// What a GEMV launch needs to know of its device to space a launch of few tiles over the SMs
// (gemv_occupancy.h). Read once, at start-up, by gemv_device().
struct GemvDevice {
    int64_t num_sms = 0;
    SmSharedMemory smem;
};

// The current device's numbers. Also raises every GEMV kernel's dynamic shared-memory limit to
// what spacing can ask for (once per device), so that no launch has to.
Expected<GemvDevice> gemv_device();

struct GemvParams {
    const bf16* x = nullptr;                 // bf16 [m, ldx], k used
    int64_t ldx = 0;                         // elements between rows of x: >= k, a multiple of 8
    int32_t m = 0;                           // 1..kGemvMaxRows
    int64_t k = 0;                           // positive, a multiple of 8
    GemvSegment segments[kGemvMaxSegments];  // the first num_segments are used
    int32_t num_segments = 0;                // 1..kGemvMaxSegments (kSiluMul 2, kRopeStore 3)
    GemvEpilogue epilogue = GemvEpilogue::kStore;
    const GemvDevice* device = nullptr;  // from gemv_device(), read on the host; null: not spaced
    GemvRopeStore rope = {};             // read for kRopeStore only
    GemvResidualNorm norm = {};          // read for kResidualNorm only
    GemvRowScale x_scale = {};           // any epilogue, m = 1 only
};

// Enqueues y_s = x · w_s^T for every used segment on `stream` (or the kSiluMul product), as a
// programmatic dependent launch (pdl.cuh). Bad sizes, strides, null or misaligned (16-byte)
// pointers are kInvalidArgument naming the field, e.g. "segments[1].ldy".
Status gemv(const GemvParams& p, cudaStream_t stream);

}  // namespace se::cuda
