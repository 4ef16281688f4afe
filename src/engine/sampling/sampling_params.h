// Per-request sampling knobs, named and defaulted as vLLM's SamplingParams so that a request
// written for vLLM (or for the OpenAI API with vLLM's extras) means the same thing here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace se {

// Below this temperature sampling is greedy and top_p / top_k / min_p have no effect (vLLM's
// _SAMPLING_EPS).
inline constexpr float kGreedyTemperature = 1e-5f;
// Most top logprobs a request may ask for per token (vLLM's default max_logprobs).
inline constexpr int32_t kMaxLogprobs = 20;

struct SamplingParams {
    float temperature = 1.0f;
    float top_p = 1.0f;  // nucleus mass in (0, 1]; 1 keeps every token
    int32_t top_k = 0;   // 0 or -1 keeps every token (vLLM accepts both)
    float min_p = 0.0f;  // keeps tokens whose probability is >= min_p * the top probability
    // Unset: the engine derives one per request, so runs stay reproducible.
    std::optional<uint64_t> seed{};
    // Unset: generate until the context is full (a server fills in the remaining context).
    std::optional<int32_t> max_tokens = 16;
    int32_t min_tokens = 0;  // EOS and stop_token_ids cannot end the request before this many
    float presence_penalty = 0.0f;    // subtracted once from every token already generated
    float frequency_penalty = 0.0f;   // subtracted per occurrence in the generated tokens
    float repetition_penalty = 1.0f;  // divides positive / multiplies negative logits of tokens
                                      // seen in the prompt or the output
    std::vector<std::string> stop{};
    std::vector<int32_t> stop_token_ids{};
    bool include_stop_str_in_output = false;
    bool ignore_eos = false;
    // Number of top logprobs to return per output token; 0 returns only the sampled token's.
    std::optional<int32_t> logprobs{};
    bool skip_special_tokens = true;
    std::map<int32_t, float> logit_bias{};  // token id -> value added to its raw logit

    // Checks every field against vLLM's ranges; token ids must lie in [0, vocab_size).
    Status validate(int32_t vocab_size) const;

    bool is_greedy() const { return temperature < kGreedyTemperature; }
};

}  // namespace se
