// Ops::move_kv for the paged bf16 cache (kv_layout.h): entries copied slot to slot, in order, as
// when a method compacts the entries it keeps toward the front of a sequence's blocks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct KvMoveParams {
    const int64_t* from = nullptr;  // i64 [num_moves], device: source slots
    const int64_t* to = nullptr;    // i64 [num_moves], device: destination slots
    bf16* k_blocks = nullptr;       // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    bf16* v_blocks = nullptr;       // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    int64_t num_slots = 0;          // num_blocks * block_size
    int32_t num_moves = 0;
    int32_t entry_elems = 0;  // num_kv_heads * head_dim, a multiple of 8
};

// Copies the K and V entry at slot from[i] to slot to[i] for i = 0, 1, ..., with the result of
// doing so one at a time: move i may read a slot an earlier move wrote (a chain such as
// to[0] = from[1]). A slot outside [0, num_slots) is a caller bug; its move copies nothing.
Status move_kv(const KvMoveParams& p, cudaStream_t stream);

}  // namespace se::cuda
