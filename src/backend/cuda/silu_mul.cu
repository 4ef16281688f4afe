#include <algorithm>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/silu_mul.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per 8 elements, grid-stride over the whole [num_rows, cols] output.
__global__ void __launch_bounds__(kThreads) silu_mul_kernel(SiluMulParams p, int64_t num_vecs) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    const int32_t vecs_per_row = p.cols / kVecElems;
    for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < num_vecs;
         i += int64_t{gridDim.x} * kThreads) {
        const int64_t row = i / vecs_per_row;
        const int64_t col = i % vecs_per_row * kVecElems;
        float g[kVecElems];
        float u[kVecElems];
        load_bf16x8(p.gate + row * p.in_row_stride + col, g);
        load_bf16x8(p.up + row * p.in_row_stride + col, u);
#pragma unroll
        for (int j = 0; j < kVecElems; ++j) g[j] = silu_times(g[j], u[j]);
        store_bf16x8(p.out + row * p.cols + col, g);
    }
}

}  // namespace

Status silu_mul(const SiluMulParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "silu_mul";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "cols", p.cols));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "in_row_stride", p.in_row_stride));
    SE_RETURN_IF_ERROR(check_aligned(kName, "gate", p.gate));
    SE_RETURN_IF_ERROR(check_aligned(kName, "up", p.up));
    SE_RETURN_IF_ERROR(check_aligned(kName, "out", p.out));
    if (p.in_row_stride < p.cols) return invalid_argument("silu_mul: in_row_stride < cols");
    const int64_t num_vecs = int64_t{p.num_rows} * (p.cols / kVecElems);
    if (num_vecs == 0) return Status::ok_status();
    const int64_t num_blocks = std::min<int64_t>((num_vecs + kThreads - 1) / kThreads, 132 * 16);
    return cuda_status(launch_pdl(silu_mul_kernel, dim3(static_cast<unsigned>(num_blocks)),
                                  dim3(kThreads), 0, stream, p, num_vecs),
                       kName);
}

}  // namespace se::cuda
