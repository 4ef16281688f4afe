// Ops::add in the CUDA backend's dtypes, for the residual updates the fused add_rms_norm does not
// cover: the f32 residual stream += a bf16 sublayer output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct ResidualAddParams {
    float* residual = nullptr;  // f32 [num_rows, cols], updated in place
    const bf16* x = nullptr;    // bf16 [num_rows, x_stride], cols used
    // f32 [num_rows, x_stride] instead of x (exactly one of them): rounded to bf16 before the
    // add, as in add_rms_norm's x_f32.
    const float* x_f32 = nullptr;
    int64_t x_stride = 0;  // elements between rows of x: >= cols, a multiple of 8
    int32_t num_rows = 0;
    int32_t cols = 0;  // a multiple of 8
};

// residual += x, in f32 (one f32 addition per element, as add_rms_norm's).
Status residual_add(const ResidualAddParams& p, cudaStream_t stream);

}  // namespace se::cuda
