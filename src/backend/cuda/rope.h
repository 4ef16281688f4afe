// Rotary position embedding in place on q and k, from an inverse-frequency table (llama3 or any
// other scaling is only a different table, as on the CPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "backend/ops.h"
#include "core/status.h"

namespace se::cuda {

struct RopeParams {
    bf16* q = nullptr;                   // bf16 [num_tokens, q_row_stride], heads at h * head_dim
    bf16* k = nullptr;                   // bf16 [num_tokens, k_row_stride], heads at h * head_dim
    const int32_t* positions = nullptr;  // i32 [num_tokens]
    const float* inv_freq = nullptr;     // f32 [rotary_dim / 2], scaling already applied
    int64_t q_row_stride = 0;  // elements; >= num_q_heads * head_dim (a fused qkv row is wider)
    int64_t k_row_stride = 0;  // elements; >= num_kv_heads * head_dim
    int32_t num_tokens = 0;
    int32_t num_q_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;
    int32_t rotary_dim = 0;  // even, <= head_dim; dims past it are left alone
    RopeStyle style = RopeStyle::kNeox;
};

// Rotates every (token, head) pair of q and k: angle = f32(position * inv_freq[i]) as HF
// computes it, then cos and sin of that f32 in f32.
Status rope(const RopeParams& p, cudaStream_t stream);

}  // namespace se::cuda
