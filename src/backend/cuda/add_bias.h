// Bias add on a bf16 GEMM output (Qwen2's q/k/v projections): y += bias, broadcast over rows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct AddBiasParams {
    bf16* y = nullptr;            // bf16 [num_rows, row_stride], cols used, updated in place
    const float* bias = nullptr;  // f32 [cols]
    int64_t row_stride = 0;       // elements between rows of y: >= cols, a multiple of 8
    int32_t num_rows = 0;
    int32_t cols = 0;  // a multiple of 8
};

// y = bf16(f32(y) + bias): the sum in f32, rounded once.
Status add_bias(const AddBiasParams& p, cudaStream_t stream);

}  // namespace se::cuda
