#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/head_rms_norm.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// One warp per (row, head): a head (64-256 values) is a few 16-byte accesses per lane, and a warp
// sum needs no shared memory. Pass 2 reads the head again (from L1) rather than keep it in
// registers, so any head_dim works.
__global__ void __launch_bounds__(kThreads) head_rms_norm_kernel(HeadRmsNormParams p) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    const int64_t head_index = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
    if (head_index >= int64_t{p.num_rows} * p.num_heads) return;  // whole warps leave together
    const int64_t row = head_index / p.num_heads;
    const int64_t head = head_index - row * p.num_heads;
    bf16* x = p.x + row * p.row_stride + head * p.head_dim;
    const int lane = threadIdx.x % 32;

    float sum_sq = 0.0f;
    for (int32_t c = lane * kVecElems; c < p.head_dim; c += 32 * kVecElems) {
        float v[kVecElems];
        load_bf16x8(x + c, v);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) sum_sq += v[i] * v[i];
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, off);
    const float inv_rms = rsqrtf(sum_sq / static_cast<float>(p.head_dim) + p.eps);

    for (int32_t c = lane * kVecElems; c < p.head_dim; c += 32 * kVecElems) {
        float v[kVecElems];
        float w[kVecElems];
        load_bf16x8(x + c, v);
        load_f32x8(p.weight + c, w);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) v[i] = w[i] * (v[i] * inv_rms);
        store_bf16x8(x + c, v);
    }
}

}  // namespace

Status head_rms_norm(const HeadRmsNormParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "head_rms_norm";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "head_dim", p.head_dim));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "row_stride", p.row_stride));
    SE_RETURN_IF_ERROR(check_aligned(kName, "x", p.x));
    SE_RETURN_IF_ERROR(check_aligned(kName, "weight", p.weight));
    if (p.row_stride < int64_t{p.num_heads} * p.head_dim) {
        return invalid_argument("head_rms_norm: row_stride < num_heads * head_dim");
    }
    const int64_t num_head_rows = int64_t{p.num_rows} * p.num_heads;
    if (num_head_rows <= 0) return Status::ok_status();
    const auto num_blocks = static_cast<unsigned>((num_head_rows + kWarps - 1) / kWarps);
    return cuda_status(
        launch_pdl(head_rms_norm_kernel, dim3(num_blocks), dim3(kThreads), 0, stream, p), kName);
}

}  // namespace se::cuda
