#include "model/model_config.h"

#include <fmt/core.h>

#include <cmath>
#include <numbers>

namespace se {

Status ModelConfig::validate() const {
    auto positive = [](int64_t v, const char* field) -> Status {
        if (v <= 0)
            return invalid_argument(fmt::format("config: {} must be positive, got {}", field, v));
        return {};
    };
    SE_RETURN_IF_ERROR(positive(vocab_size, "vocab_size"));
    SE_RETURN_IF_ERROR(positive(hidden_size, "hidden_size"));
    SE_RETURN_IF_ERROR(positive(intermediate_size, "intermediate_size"));
    SE_RETURN_IF_ERROR(positive(num_layers, "num_hidden_layers"));
    SE_RETURN_IF_ERROR(positive(num_heads, "num_attention_heads"));
    SE_RETURN_IF_ERROR(positive(num_kv_heads, "num_key_value_heads"));
    SE_RETURN_IF_ERROR(positive(head_dim, "head_dim"));
    SE_RETURN_IF_ERROR(positive(max_position_embeddings, "max_position_embeddings"));
    if (num_heads % num_kv_heads != 0) {
        return invalid_argument(fmt::format(
            "config: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})",
            num_heads, num_kv_heads));
    }
    if (head_dim % 2 != 0) {
        return invalid_argument(fmt::format("config: head_dim must be even, got {}", head_dim));
    }
    if (!(rms_norm_eps > 0.0f)) {
        return invalid_argument(
            fmt::format("config: rms_norm_eps must be positive, got {}", rms_norm_eps));
    }
    if (!(rope_theta > 0.0f)) {
        return invalid_argument(
            fmt::format("config: rope_theta must be positive, got {}", rope_theta));
    }
    if (rope_scaling.type != RopeScalingType::kNone && !(rope_scaling.factor > 0.0f)) {
        return invalid_argument("config: rope_scaling.factor must be positive");
    }
    if (rope_scaling.type == RopeScalingType::kLlama3) {
        if (rope_scaling.original_max_position_embeddings <= 0) {
            return invalid_argument(
                "config: rope_scaling.original_max_position_embeddings must be positive for "
                "llama3");
        }
        if (!(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor)) {
            return invalid_argument(
                "config: rope_scaling.high_freq_factor must exceed low_freq_factor for llama3");
        }
    }
    if (!rope_freq_factors.empty() &&
        rope_freq_factors.size() != static_cast<size_t>(head_dim / 2)) {
        return invalid_argument(fmt::format("rope_freqs has {} entries, expected head_dim / 2 = {}",
                                            rope_freq_factors.size(), head_dim / 2));
    }
    for (int32_t id : eos_token_ids) {
        if (id < 0 || id >= vocab_size) {
            return invalid_argument(
                fmt::format("config: eos_token_id {} is outside the vocabulary", id));
        }
    }
    return {};
}

std::vector<float> rope_inv_freq(const ModelConfig& config) {
    const int32_t half = config.head_dim / 2;
    std::vector<float> inv_freq(static_cast<size_t>(half));
    for (int32_t i = 0; i < half; ++i) {
        // Same order of float32 operations as transformers' default RoPE initialisation.
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(config.head_dim);
        inv_freq[i] = 1.0f / std::pow(config.rope_theta, exponent);
    }
    const RopeScaling& s = config.rope_scaling;
    switch (s.type) {
        case RopeScalingType::kNone:
            break;
        case RopeScalingType::kLinear:
            for (float& f : inv_freq) f /= s.factor;
            break;
        case RopeScalingType::kLlama3: {
            const float old_len = static_cast<float>(s.original_max_position_embeddings);
            const float low_freq_wavelen = old_len / s.low_freq_factor;
            const float high_freq_wavelen = old_len / s.high_freq_factor;
            for (float& f : inv_freq) {
                const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
                if (wavelen > low_freq_wavelen) {
                    f = f / s.factor;
                } else if (wavelen >= high_freq_wavelen) {
                    const float smooth = (old_len / wavelen - s.low_freq_factor) /
                                         (s.high_freq_factor - s.low_freq_factor);
                    f = (1.0f - smooth) * f / s.factor + smooth * f;
                }
            }
            break;
        }
    }
    if (!config.rope_freq_factors.empty()) {
        SE_CHECK(config.rope_freq_factors.size() == inv_freq.size());
        for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] /= config.rope_freq_factors[i];
    }
    return inv_freq;
}

}  // namespace se
