// The edits a request makes to its raw logits before temperature: logit bias, masking of tokens
// that may not end the request yet, and vLLM's repetition / frequency / presence penalties.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace se {

// logits[id] += bias for every entry. Ids must lie inside the logits (validated upstream).
void apply_logit_bias(std::span<float> logits /* f32 [vocab] */,
                      const std::map<int32_t, float>& bias);

// Sets the given tokens' logits to -inf so they can be neither sampled nor chosen greedily.
void mask_tokens(std::span<float> logits /* f32 [vocab] */, std::span<const int32_t> token_ids);

// Applies the penalties that depend on which tokens already appeared. Keeps vocabulary-sized
// scratch buffers (zero between calls) so a decode step allocates nothing after the first.
class PenaltyApplier {
  public:
    // vLLM semantics: every token present in the prompt or the output (counted once) has a
    // positive logit divided by `penalty`, a non-positive one multiplied by it.
    void apply_repetition(std::span<float> logits /* f32 [vocab] */, float penalty,
                          std::span<const int32_t> prompt_tokens,
                          std::span<const int32_t> output_tokens);

    // OpenAI semantics over the output only:
    // logit -= frequency * count + presence * (count > 0).
    void apply_frequency_presence(std::span<float> logits /* f32 [vocab] */, float frequency,
                                  float presence, std::span<const int32_t> output_tokens);

  private:
    std::vector<uint8_t> seen_;    // u8 [vocab]: 1 while a token is being penalised this call
    std::vector<int32_t> counts_;  // i32 [vocab]: occurrences in the output this call
};

}  // namespace se
