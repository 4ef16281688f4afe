// Per-head RMSNorm in place (Qwen3's q_norm and k_norm): each head's head_dim values of a bf16
// row are divided by their own rms and scaled by a weight shared by all heads.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct HeadRmsNormParams {
    bf16* x = nullptr;              // bf16 [num_rows, row_stride], num_heads * head_dim used
    const float* weight = nullptr;  // f32 [head_dim]
    int64_t row_stride = 0;         // elements between rows: >= num_heads * head_dim, multiple of 8
    int32_t num_rows = 0;
    int32_t num_heads = 0;
    int32_t head_dim = 0;  // a multiple of 8
    float eps = 1e-6f;
};

// x = x / sqrt(mean(x^2) + eps) * weight per head, in f32 from the bf16 x (as HF), rounded once.
Status head_rms_norm(const HeadRmsNormParams& p, cudaStream_t stream);

}  // namespace se::cuda
