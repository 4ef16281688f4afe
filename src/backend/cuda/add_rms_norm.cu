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

// One block per output row. Pass 1 adds and writes the residual and sums its squares; pass 2 reads
// the row back (each thread its own elements, from L1/L2) and normalises.
__global__ void __launch_bounds__(kThreads) add_rms_norm_kernel(AddRmsNormParams p) {
    __shared__ float scratch[kWarps];
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    const int64_t base = int64_t{blockIdx.x} * p.cols;
    float* residual =
        p.residual + (p.rows == nullptr ? base : int64_t{p.rows[blockIdx.x]} * p.cols);
    float sum_sq = 0.0f;
    for (int32_t c = threadIdx.x * kVecElems; c < p.cols; c += kThreads * kVecElems) {
        float r[kVecElems];
        load_f32x8(residual + c, r);
        if (p.x != nullptr || p.x_f32 != nullptr) {
            float x[kVecElems];
            if (p.x != nullptr) {
                load_bf16x8(p.x + base + c, x);
            } else {
                load_f32x8(p.x_f32 + base + c, x);
#pragma unroll
                for (int i = 0; i < kVecElems; ++i) x[i] = __bfloat162float(__float2bfloat16(x[i]));
            }
#pragma unroll
            for (int i = 0; i < kVecElems; ++i) r[i] += x[i];
            store_f32x8(residual + c, r);
        }
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) sum_sq += r[i] * r[i];
    }
    const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(p.cols) + p.eps);
    for (int32_t c = threadIdx.x * kVecElems; c < p.cols; c += kThreads * kVecElems) {
        float r[kVecElems];
        float w[kVecElems];
        load_f32x8(residual + c, r);
        load_f32x8(p.weight + c, w);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) r[i] = w[i] * (r[i] * inv_rms);
        store_bf16x8(p.out + base + c, r);
    }
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
    return cuda_status(
        launch_pdl(add_rms_norm_kernel, dim3(p.num_rows), dim3(kThreads), 0, stream, p), kName);
}

}  // namespace se::cuda
