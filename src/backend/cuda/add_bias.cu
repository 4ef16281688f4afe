#include "backend/cuda/add_bias.h"
#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;

// One block per row, 8 elements per access.
__global__ void __launch_bounds__(kThreads) add_bias_kernel(AddBiasParams p) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    bf16* y = p.y + int64_t{blockIdx.x} * p.row_stride;
    for (int32_t c = threadIdx.x * kVecElems; c < p.cols; c += kThreads * kVecElems) {
        float v[kVecElems];
        float b[kVecElems];
        load_bf16x8(y + c, v);
        load_f32x8(p.bias + c, b);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) v[i] += b[i];
        store_bf16x8(y + c, v);
    }
}

}  // namespace

Status add_bias(const AddBiasParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "add_bias";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "cols", p.cols));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "row_stride", p.row_stride));
    SE_RETURN_IF_ERROR(check_aligned(kName, "y", p.y));
    SE_RETURN_IF_ERROR(check_aligned(kName, "bias", p.bias));
    if (p.row_stride < p.cols) return invalid_argument("add_bias: row_stride < cols");
    if (p.num_rows == 0) return Status::ok_status();
    return cuda_status(launch_pdl(add_bias_kernel, dim3(p.num_rows), dim3(kThreads), 0, stream, p),
                       kName);
}

}  // namespace se::cuda
