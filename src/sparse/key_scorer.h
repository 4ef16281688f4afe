// Attention scores of query vectors against one sequence's resident keys, for methods that rank
// entries by attention (observation windows, accumulated attention mass, filter layers):
//
//   z[h][j] = scale * q_h . k_{g(h), j}        j < visible,  g(h) = h / (num_heads / num_kv_heads)
//   kLogits        out[h][j] = z[h][j]
//   kProbabilities out[h][j] = softmax_j(z[h][.]) over the `visible` entries (all of them, as the
//                              attention row does), computed in double
//
// The keys are converted to f32 once, when the scorer is built, and shared by every query scored.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_layout.h"
#include "backend/ops.h"

namespace se {

enum class ScoreMode : uint8_t { kLogits, kProbabilities };

class KeyScorer {
  public:
    // Keys of entries [0, num_entries) of the sequence with `block_table`.
    KeyScorer(const PagedKvCache& cache, std::span<const int32_t> block_table, int32_t num_entries,
              const AttentionArgs& args);

    int32_t num_entries() const { return num_entries_; }

    // q f32 [num_heads * head_dim] (one token's query, every head) -> out f32
    // [num_heads, visible] (row h at out + h * visible); visible <= num_entries().
    void score(const float* q, int32_t visible, ScoreMode mode, std::span<float> out) const;

  private:
    AttentionArgs args_;
    int32_t num_entries_ = 0;
    std::vector<float> keys_;  // f32 [num_entries, num_kv_heads, head_dim]
};

}  // namespace se
