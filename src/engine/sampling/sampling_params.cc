#include "engine/sampling/sampling_params.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"

namespace se {
namespace {

// False for NaN, so NaN never passes a range check.
bool in_closed_range(float value, float lo, float hi) {
    return value >= lo && value <= hi;
}

Status validate_floats(const SamplingParams& p) {
    if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
        return invalid_argument(
            fmt::format("temperature must be finite and >= 0, got {}", p.temperature));
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        return invalid_argument(fmt::format("top_p must be in (0, 1], got {}", p.top_p));
    if (!in_closed_range(p.min_p, 0.0f, 1.0f))
        return invalid_argument(fmt::format("min_p must be in [0, 1], got {}", p.min_p));
    if (!in_closed_range(p.presence_penalty, -2.0f, 2.0f))
        return invalid_argument(
            fmt::format("presence_penalty must be in [-2, 2], got {}", p.presence_penalty));
    if (!in_closed_range(p.frequency_penalty, -2.0f, 2.0f))
        return invalid_argument(
            fmt::format("frequency_penalty must be in [-2, 2], got {}", p.frequency_penalty));
    if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty))
        return invalid_argument(
            fmt::format("repetition_penalty must be finite and > 0, got {}", p.repetition_penalty));
    return {};
}

Status validate_counts(const SamplingParams& p) {
    if (p.top_k < -1)
        return invalid_argument(
            fmt::format("top_k must be -1 or 0 (off) or >= 1, got {}", p.top_k));
    if (p.max_tokens && *p.max_tokens < 1)
        return invalid_argument(fmt::format("max_tokens must be >= 1, got {}", *p.max_tokens));
    if (p.min_tokens < 0)
        return invalid_argument(fmt::format("min_tokens must be >= 0, got {}", p.min_tokens));
    if (p.max_tokens && p.min_tokens > *p.max_tokens)
        return invalid_argument(fmt::format("min_tokens must be <= max_tokens ({}), got {}",
                                            *p.max_tokens, p.min_tokens));
    if (p.logprobs && (*p.logprobs < 0 || *p.logprobs > kMaxLogprobs))
        return invalid_argument(
            fmt::format("logprobs must be in [0, {}], got {}", kMaxLogprobs, *p.logprobs));
    return {};
}

Status validate_tokens(const SamplingParams& p, int32_t vocab_size) {
    for (size_t i = 0; i < p.stop.size(); ++i) {
        if (p.stop[i].empty())
            return invalid_argument(fmt::format("stop[{}] must not be empty", i));
    }
    for (size_t i = 0; i < p.stop_token_ids.size(); ++i) {
        const int32_t id = p.stop_token_ids[i];
        if (id < 0 || id >= vocab_size)
            return invalid_argument(
                fmt::format("stop_token_ids[{}] must be in [0, {}), got {}", i, vocab_size, id));
    }
    for (const auto& [id, bias] : p.logit_bias) {
        if (id < 0 || id >= vocab_size)
            return invalid_argument(
                fmt::format("logit_bias token id must be in [0, {}), got {}", vocab_size, id));
        if (!std::isfinite(bias))
            return invalid_argument(fmt::format("logit_bias[{}] must be finite, got {}", id, bias));
    }
    return {};
}

}  // namespace

Status SamplingParams::validate(int32_t vocab_size) const {
    SE_CHECK(vocab_size > 0, "vocab_size %d", vocab_size);
    SE_RETURN_IF_ERROR(validate_floats(*this));
    SE_RETURN_IF_ERROR(validate_counts(*this));
    return validate_tokens(*this, vocab_size);
}

}  // namespace se
