// Writes a step's new K and V rows into the paged bf16 cache (kv_layout.h), as Ops::store_kv.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct KvStoreParams {
    const bf16* k = nullptr;         // bf16 [num_tokens, row_stride], num_kv_heads * head_dim used
    const bf16* v = nullptr;         // bf16 [num_tokens, row_stride]
    const int64_t* slots = nullptr;  // i64 [num_tokens]: block_id * block_size + row in block
    bf16* k_blocks = nullptr;        // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    bf16* v_blocks = nullptr;        // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    int64_t row_stride = 0;          // elements between tokens of k and v
    int64_t num_slots = 0;           // num_blocks * block_size
    int32_t num_tokens = 0;
    int32_t entry_elems = 0;  // num_kv_heads * head_dim, a multiple of 8
};

// Token i's K and V go to entry slots[i]. Slots live on the device; one outside
// [0, num_slots) is a caller bug, and the kernel writes nothing for it rather than write
// outside the cache.
Status store_kv(const KvStoreParams& p, cudaStream_t stream);

}  // namespace se::cuda
