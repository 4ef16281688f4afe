// Log-probabilities reported back to the client. Only the pieces a response needs are computed
// (the normaliser, the top-n and one token's rank), never a whole log_softmax vector.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "engine/sampling/sampling_params.h"

namespace se {

struct TokenLogprob {
    int32_t token;
    float logprob;
};

// Logprobs of one sampled token, in the order vLLM returns them.
struct SampledLogprobs {
    float logprob = 0.0f;  // the sampled token's
    int32_t rank = 0;      // 1-based position of the sampled token in top-n order
    std::array<TokenLogprob, kMaxLogprobs> top{};  // first num_top used
    int32_t num_top = 0;

    std::span<const TokenLogprob> top_logprobs() const { return {top.data(), size_t(num_top)}; }
};

// log(sum(exp(logits))) in a single pass with a running maximum; -inf logits contribute nothing.
float log_sum_exp(std::span<const float> logits /* f32 [vocab] */);

// Logprobs of `token` and of the `num_top` most probable tokens (descending, ties to the lower
// id) under log_softmax(logits).
SampledLogprobs compute_sampled_logprobs(std::span<const float> logits /* f32 [vocab] */,
                                         int32_t token, int32_t num_top);

}  // namespace se
