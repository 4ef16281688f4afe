#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/residual_add.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;

// One block per row, 8 elements per access.
__global__ void __launch_bounds__(kThreads) residual_add_kernel(ResidualAddParams p) {
    float* residual = p.residual + int64_t{blockIdx.x} * p.cols;
    const bf16* x = p.x + int64_t{blockIdx.x} * p.x_stride;
    for (int32_t c = threadIdx.x * kVecElems; c < p.cols; c += kThreads * kVecElems) {
        float r[kVecElems];
        float v[kVecElems];
        load_f32x8(residual + c, r);
        load_bf16x8(x + c, v);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) r[i] += v[i];
        store_f32x8(residual + c, r);
    }
}

}  // namespace

Status residual_add(const ResidualAddParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "residual_add";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "cols", p.cols));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "x_stride", p.x_stride));
    SE_RETURN_IF_ERROR(check_aligned(kName, "residual", p.residual));
    SE_RETURN_IF_ERROR(check_aligned(kName, "x", p.x));
    if (p.x_stride < p.cols) return invalid_argument("residual_add: x_stride < cols");
    if (p.num_rows == 0) return Status::ok_status();
    residual_add_kernel<<<p.num_rows, kThreads, 0, stream>>>(p);
    return launch_status(kName);
}

}  // namespace se::cuda
