#include "backend/cuda/add_rms_norm.h"
#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ float block_sum(float v, float* scratch /* f32 [kWarps] */) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += scratch[w];
    return total;
}

// Columns a thread takes in one 16-byte piece, and the row's pieces between two of its own.
constexpr int32_t kStride = kThreads * kVecElems;
// Rows of up to kMaxHeldPieces * kStride columns (8192) stay in registers between the passes.
constexpr int kMaxHeldPieces = 4;

__device__ __forceinline__ bool adds(const AddRmsNormParams& p) {
    return p.x != nullptr || p.x_f32 != nullptr;
}

// Row piece c of the residual, r, after the add of x (when there is one), written back; the sum
// of its squares added to sum_sq in element order.
__device__ __forceinline__ void add_piece(const AddRmsNormParams& p, float* residual, int32_t c,
                                          float (&r)[kVecElems], const float (&x)[kVecElems],
                                          float& sum_sq) {
    if (adds(p)) {
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) r[i] += x[i];
        store_f32x8(residual + c, r);
    }
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) sum_sq += r[i] * r[i];
}

__device__ __forceinline__ void store_normed(const AddRmsNormParams& p, int64_t base, int32_t c,
                                             float (&r)[kVecElems], const float (&w)[kVecElems],
                                             float inv_rms) {
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) r[i] = w[i] * (r[i] * inv_rms);
    store_bf16x8(p.out + base + c, r);
}

// One block per output row. Pass 1 adds and writes the residual and sums its squares; pass 2
// normalises. kHeld > 0 (rows of at most kHeld * kStride columns): each thread keeps its kHeld
// pieces of the residual in registers between the passes and loads its pieces of the weight,
// which is no kernel's output, before the wait, so that after the wait the row costs one round
// trip to memory, not three. kHeld = 0 (longer rows): pass 2 reads the row back. Both add and
// round in the same order: the same bits.
template <int kHeld>
__global__ void __launch_bounds__(kThreads) add_rms_norm_kernel(AddRmsNormParams p) {
    __shared__ float scratch[kWarps];
    constexpr int kPieces = kHeld > 0 ? kHeld : 1;
    float w[kPieces][kVecElems];
    const int32_t first = static_cast<int32_t>(threadIdx.x) * kVecElems;
    if constexpr (kHeld > 0) {
#pragma unroll
        for (int j = 0; j < kHeld; ++j) {
            if (first + j * kStride < p.cols) load_f32x8(p.weight + first + j * kStride, w[j]);
        }
    }
    pdl_enter();  // every other input is an earlier kernel's output (pdl.cuh)
    const int64_t base = int64_t{blockIdx.x} * p.cols;
    float* residual =
        p.residual + (p.rows == nullptr ? base : int64_t{p.rows[blockIdx.x]} * p.cols);
    float sum_sq = 0.0f;
    if constexpr (kHeld > 0) {
        float r[kHeld][kVecElems];
        float x[kHeld][kVecElems];
#pragma unroll
        for (int j = 0; j < kHeld; ++j) {  // every load first, so that they overlap
            if (first + j * kStride >= p.cols) continue;
            load_f32x8(residual + first + j * kStride, r[j]);
            if (adds(p)) load_act_x8(p.x, p.x_f32, base + first + j * kStride, x[j]);
        }
#pragma unroll
        for (int j = 0; j < kHeld; ++j) {
            if (first + j * kStride < p.cols)
                add_piece(p, residual, first + j * kStride, r[j], x[j], sum_sq);
        }
        const float inv_rms =
            rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(p.cols) + p.eps);
#pragma unroll
        for (int j = 0; j < kHeld; ++j) {
            if (first + j * kStride < p.cols)
                store_normed(p, base, first + j * kStride, r[j], w[j], inv_rms);
        }
    } else {
        for (int32_t c = first; c < p.cols; c += kStride) {
            float r[kVecElems];
            float x[kVecElems];
            load_f32x8(residual + c, r);
            if (adds(p)) load_act_x8(p.x, p.x_f32, base + c, x);
            add_piece(p, residual, c, r, x, sum_sq);
        }
        const float inv_rms =
            rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(p.cols) + p.eps);
        for (int32_t c = first; c < p.cols; c += kStride) {
            float r[kVecElems];
            load_f32x8(residual + c, r);
            load_f32x8(p.weight + c, w[0]);
            store_normed(p, base, c, r, w[0], inv_rms);
        }
    }
}

template <int kHeld>
Status launch(const AddRmsNormParams& p, cudaStream_t stream) {
    return cuda_status(
        launch_pdl(add_rms_norm_kernel<kHeld>, dim3(p.num_rows), dim3(kThreads), 0, stream, p),
        "add_rms_norm");
}

}  // namespace

Status add_rms_norm(const AddRmsNormParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "add_rms_norm";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "cols", p.cols));
    for (const void* ptr : {static_cast<const void*>(p.residual), static_cast<const void*>(p.x),
                            static_cast<const void*>(p.x_f32), static_cast<const void*>(p.weight),
                            static_cast<const void*>(p.out)}) {
        SE_RETURN_IF_ERROR(check_aligned(kName, "an operand", ptr));
    }
    if (p.x != nullptr && p.x_f32 != nullptr) {
        return invalid_argument("add_rms_norm: x and x_f32 both given");
    }
    if (p.rows != nullptr && (p.x != nullptr || p.x_f32 != nullptr)) {
        return invalid_argument(
            "add_rms_norm: rows needs x == null (gathered rows are normalised, nothing is added)");
    }
    if (p.num_rows == 0) return Status::ok_status();
    const int32_t pieces = (p.cols + kStride - 1) / kStride;  // per thread
    if (pieces <= 1) return launch<1>(p, stream);
    if (pieces <= 2) return launch<2>(p, stream);
    if (pieces <= kMaxHeldPieces) return launch<kMaxHeldPieces>(p, stream);
    return launch<0>(p, stream);
}

}  // namespace se::cuda
