// Per-head RMSNorm (Qwen3's q_norm and k_norm, or none) then rotary position embedding, in place
// on q and k in one launch: what head_rms_norm on q, head_rms_norm on k and rope do in three,
// bit for bit. Optionally the same launch writes the rotated k and v into the paged bf16 cache,
// as store_kv would (kv_store.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "backend/ops.h"
#include "core/status.h"

namespace se::cuda {

// Where a step's K and V rows go: token i's to entry slots[i] of the cache (kv_layout.h), whose
// entry is num_kv_heads * head_dim. A slot outside [0, num_slots) is a caller bug, and nothing
// is written for it rather than outside the cache.
struct QkNormRopeStore {
    const bf16* v = nullptr;         // bf16 [num_tokens, v_row_stride], as k's heads
    int64_t v_row_stride = 0;        // elements: >= num_kv_heads * head_dim, a multiple of 8
    const int64_t* slots = nullptr;  // i64 [num_tokens]: block_id * block_size + row in block
    bf16* k_blocks = nullptr;        // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    bf16* v_blocks = nullptr;        // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    int64_t num_slots = 0;           // num_blocks * block_size
};

struct QkNormRopeParams {
    bf16* q = nullptr;                     // bf16 [num_tokens, q_row_stride], heads at h * head_dim
    bf16* k = nullptr;                     // bf16 [num_tokens, k_row_stride], heads at h * head_dim
    const float* q_norm_weight = nullptr;  // f32 [head_dim]; null: q heads are not normed
    const float* k_norm_weight = nullptr;  // f32 [head_dim]; null: k heads are not normed
    const int32_t* positions = nullptr;    // i32 [num_tokens]
    const float* inv_freq = nullptr;       // f32 [rotary_dim / 2], scaling already applied
    int64_t q_row_stride = 0;              // elements: >= num_q_heads * head_dim, a multiple of 8
    int64_t k_row_stride = 0;              // elements: >= num_kv_heads * head_dim, a multiple of 8
    int32_t num_tokens = 0;
    int32_t num_q_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;    // a multiple of 8, at most kQkNormRopeMaxHeadDim
    int32_t rotary_dim = 0;  // even, <= head_dim; dims past it are only normed
    RopeStyle style = RopeStyle::kNeox;
    float eps = 1e-6f;      // of both norms
    QkNormRopeStore store;  // store.k_blocks null: nothing is stored
};

inline constexpr int32_t kQkNormRopeMaxHeadDim = 256;

// Each (token, head) of q and k: x = x / sqrt(mean(x^2) + eps) * weight in f32 from the bf16 x,
// rounded to bf16 (as head_rms_norm); then the rotation of rope from those bf16 values, in f32,
// rounded once more. With a store, k's final bits and v's go to the cache as well.
Status qk_norm_rope(const QkNormRopeParams& p, cudaStream_t stream);

}  // namespace se::cuda
