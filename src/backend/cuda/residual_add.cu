#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/residual_add.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;

// One block per row, 8 elements per access.
__global__ void __launch_bounds__(kThreads) residual_add_kernel(ResidualAddParams p) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    float* residual = p.residual + int64_t{blockIdx.x} * p.cols;
    const int64_t row = int64_t{blockIdx.x} * p.x_stride;
    for (int32_t c = threadIdx.x * kVecElems; c < p.cols; c += kThreads * kVecElems) {
        float r[kVecElems];
        float v[kVecElems];
        load_f32x8(residual + c, r);
        load_act_x8(p.x, p.x_f32, row + c, v);
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
    SE_RETURN_IF_ERROR(check_aligned(kName, "x_f32", p.x_f32));
    if (p.x_stride < p.cols) return invalid_argument("residual_add: x_stride < cols");
    if ((p.x == nullptr) == (p.x_f32 == nullptr)) {
        return invalid_argument("residual_add: give exactly one of x and x_f32");
    }
    if (p.num_rows == 0) return Status::ok_status();
    return cuda_status(
        launch_pdl(residual_add_kernel, dim3(p.num_rows), dim3(kThreads), 0, stream, p), kName);
}

}  // namespace se::cuda
