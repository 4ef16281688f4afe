// Attention over a gathered subset of each sequence's paged entries (kv_layout.h PagedKvGather):
// every query row of a sequence reads exactly its KV head's listed entries. One work item per
// (sequence, KV head), run in parallel; within an item each query vector is a plain two-pass
// softmax in f32 over its entries in list order.
#pragma once

#include "backend/ops.h"

namespace se::cpu {

// out f32 [n, num_heads * head_dim] = attention of q f32 [n, num_heads * head_dim] over kv.
void attention_gather(const ConstTensorView& q, const PagedKvGather& kv, const AttentionArgs& args,
                      TensorView out, int32_t num_threads);

// Copies entries from[i] -> to[i] in order (K and V planes).
void move_kv_entries(const PagedKvCache& cache, std::span<const int64_t> from,
                     std::span<const int64_t> to);

}  // namespace se::cpu
