#include "engine/sampling/logits_processors.h"

#include <limits>

#include "core/check.h"

namespace se {
namespace {

void check_token(int32_t token, size_t vocab_size) {
    SE_CHECK(token >= 0 && static_cast<size_t>(token) < vocab_size, "token %d outside vocab %zu",
             token, vocab_size);
}

}  // namespace

void apply_logit_bias(std::span<float> logits, const std::map<int32_t, float>& bias) {
    for (const auto& [token, value] : bias) {
        check_token(token, logits.size());
        logits[token] += value;
    }
}

void mask_tokens(std::span<float> logits, std::span<const int32_t> token_ids) {
    for (const int32_t token : token_ids) {
        check_token(token, logits.size());
        logits[token] = -std::numeric_limits<float>::infinity();
    }
}

void PenaltyApplier::apply_repetition(std::span<float> logits, float penalty,
                                      std::span<const int32_t> prompt_tokens,
                                      std::span<const int32_t> output_tokens) {
    if (seen_.size() != logits.size()) seen_.assign(logits.size(), 0);
    auto penalise = [&](std::span<const int32_t> tokens) {
        for (const int32_t token : tokens) {
            check_token(token, logits.size());
            if (seen_[token]) continue;
            seen_[token] = 1;
            float& logit = logits[token];
            logit = logit > 0.0f ? logit / penalty : logit * penalty;
        }
    };
    penalise(prompt_tokens);
    penalise(output_tokens);
    for (const int32_t token : prompt_tokens) seen_[token] = 0;
    for (const int32_t token : output_tokens) seen_[token] = 0;
}

void PenaltyApplier::apply_frequency_presence(std::span<float> logits, float frequency,
                                              float presence,
                                              std::span<const int32_t> output_tokens) {
    if (counts_.size() != logits.size()) counts_.assign(logits.size(), 0);
    for (const int32_t token : output_tokens) {
        check_token(token, logits.size());
        ++counts_[token];
    }
    // The second pass penalises each distinct token once and leaves the counts zeroed.
    for (const int32_t token : output_tokens) {
        const int32_t count = counts_[token];
        if (count == 0) continue;
        logits[token] -= frequency * static_cast<float>(count) + presence;
        counts_[token] = 0;
    }
}

}  // namespace se
