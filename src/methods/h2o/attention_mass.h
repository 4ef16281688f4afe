// Accumulated attention mass (H2O's heavy-hitter score): per resident entry of one sequence and
// layer, the sum of the attention probabilities every query row gave it, over all query heads.
//
//   step rows r = 0 .. q_len-1 of the sequence; row r sees entries [0, kv_len - q_len + r]
//   m[j]    = sum_r sum_h P_{h,r,j}       P = causal softmax over every visible entry
//   acc[j] += m[j]                        (the runtime adds it to the cache manager's scores)
//
// Entries the step added start at 0 in the cache, so they end the step at their own column sums.
// Under tensor parallelism a rank sums its own query heads; the runtime sums m over the ranks.
#pragma once

#include <vector>

#include "backend/kv_layout.h"
#include "backend/ops.h"
#include "core/tensor_view.h"

namespace se::h2o {

// m f32 [seq.kv_len]: the step's probability mass of `seq` (its rows of q f32 [num_tokens,
// num_heads * head_dim], its keys in `cache`), summed in double and rounded once.
std::vector<float> step_attention_mass(const PagedKvCache& cache, const PagedSeq& seq,
                                       const ConstTensorView& q, const AttentionArgs& args,
                                       int32_t num_threads);

}  // namespace se::h2o
