// Accumulated attention mass (H2O's heavy-hitter score): per resident entry of one sequence and
// layer, the sum of the attention probabilities every query row gave it, over all query heads.
//
//   step rows r = 0 .. q_len-1 of the sequence; row r sees entries [0, kv_len - q_len + r]
//   acc[j] += sum_r sum_h P_{h,r,j}       P = causal softmax over every visible entry
//
// Entries the step added start at 0 in the cache, so they end the step at their own column sums.
#pragma once

#include <span>

#include "backend/kv_layout.h"
#include "backend/ops.h"
#include "core/tensor_view.h"

namespace se::h2o {

// Adds the step's probability mass of `seq` (its rows of q f32 [num_tokens, num_heads *
// head_dim], its keys in `cache`) to acc f32 [seq.kv_len]. Sums in double, adds once.
void add_attention_mass(const PagedKvCache& cache, const PagedSeq& seq, const ConstTensorView& q,
                        const AttentionArgs& args, std::span<float> acc, int32_t num_threads);

}  // namespace se::h2o
