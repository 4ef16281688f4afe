// OmniKV's token scores in PySE's form: per query head a softmax over the candidate entries only
// (not over every visible entry, unlike the attention row), then the max over heads:
//
//   p[h][j] = exp(z[h][j]) / sum_{i in [first, end)} exp(z[h][i])      j in [first, end)
//   score[j - first] = max_h p[h][j]
//
// z are the scaled logits of one decode query against the sequence's keys (KeyScorer, logits).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace se {

// logits f32 [num_heads, visible]; fills scores f32 [end - first].
void candidate_scores(std::span<const float> logits, int32_t num_heads, int32_t visible,
                      int32_t first, int32_t end, std::vector<float>& scores);

}  // namespace se
