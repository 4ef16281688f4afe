#include "engine/sampling/sampler.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "core/check.h"

namespace se {

int32_t argmax_lowest_id(std::span<const float> logits) {
    SE_CHECK(!logits.empty(), "empty logits");
    // Independent lanes let the compiler vectorize the maximum (a single running maximum is a
    // serial dependency it will not reorder); the first index holding it is found afterwards.
    constexpr size_t kLanes = 16;
    std::array<float, kLanes> lane_max;
    lane_max.fill(-std::numeric_limits<float>::infinity());
    size_t i = 0;
    for (; i + kLanes <= logits.size(); i += kLanes) {
        for (size_t j = 0; j < kLanes; ++j)
            lane_max[j] = logits[i + j] > lane_max[j] ? logits[i + j] : lane_max[j];
    }
    float max_logit = -std::numeric_limits<float>::infinity();
    for (; i < logits.size(); ++i) max_logit = logits[i] > max_logit ? logits[i] : max_logit;
    for (const float m : lane_max) max_logit = m > max_logit ? m : max_logit;
    for (size_t k = 0; k < logits.size(); ++k) {
        if (logits[k] == max_logit) return static_cast<int32_t>(k);
    }
    return 0;  // every logit is NaN
}

Sampler::Sampler(SamplingParams params, SamplerOptions options)
    : params_(std::move(params)), rng_(params_.seed.value_or(options.seed_if_unset)) {
    min_tokens_masked_ = params_.stop_token_ids;
    if (!params_.ignore_eos) {
        min_tokens_masked_.insert(min_tokens_masked_.end(), options.eos_token_ids.begin(),
                                  options.eos_token_ids.end());
    }
}

SampleResult Sampler::sample(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> output_tokens) {
    SE_CHECK(!logits.empty(), "empty logits");
    if (params_.logprobs) raw_logits_.assign(logits.begin(), logits.end());
    process_logits(logits, prompt_tokens, output_tokens);
    SampleResult result;
    result.token = params_.is_greedy() ? argmax_lowest_id(logits) : draw(logits);
    if (params_.logprobs)
        result.logprobs = compute_sampled_logprobs(raw_logits_, result.token, *params_.logprobs);
    return result;
}

RowSampling Sampler::plan(int32_t row, std::span<const int32_t> prompt_tokens,
                          std::span<const int32_t> output_tokens, std::vector<LogitEdit>& edits) {
    const bool masking = std::cmp_less(output_tokens.size(), params_.min_tokens);
    edit_planner_.plan(
        row, params_,
        masking ? std::span<const int32_t>(min_tokens_masked_) : std::span<const int32_t>(),
        prompt_tokens, output_tokens, edits);
    if (params_.is_greedy()) return {.temperature = 0.0f};
    return {.temperature = params_.temperature,
            .top_k = std::max(params_.top_k, 0),  // -1 and 0 both keep every token
            .top_p = params_.top_p,
            .min_p = params_.min_p,
            .u = rng_.next_double()};
}

SampleResult Sampler::finish(int32_t token, std::span<const float> raw_logits) const {
    SampleResult result;
    result.token = token;
    if (params_.logprobs)
        result.logprobs = compute_sampled_logprobs(raw_logits, token, *params_.logprobs);
    return result;
}

void Sampler::process_logits(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> output_tokens) {
    apply_logit_bias(logits, params_.logit_bias);
    if (std::cmp_less(output_tokens.size(), params_.min_tokens))
        mask_tokens(logits, min_tokens_masked_);
    if (params_.repetition_penalty != 1.0f) {
        penalties_.apply_repetition(logits, params_.repetition_penalty, prompt_tokens,
                                    output_tokens);
    }
    if (params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f) {
        penalties_.apply_frequency_presence(logits, params_.frequency_penalty,
                                            params_.presence_penalty, output_tokens);
    }
}

int32_t Sampler::draw(std::span<const float> logits) {
    candidates_.build(logits, params_.temperature, params_.top_k);
    // Nothing finite is left only if the model produced no finite logit at all; the greedy
    // choice is then as good as any and keeps the step alive.
    if (candidates_.empty()) return argmax_lowest_id(logits);
    candidates_.apply_top_p(params_.top_p);
    candidates_.apply_min_p(params_.min_p);
    return candidates_.pick(rng_.next_double());
}

}  // namespace se
