// The tensors an architecture's forward pass reads, with their shapes: the contract between the
// loaders (and the dummy generator) and the model code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace se {

enum class WeightRole : uint8_t {
    kEmbedding,  // model.embed_tokens.weight [vocab, hidden]
    kLinear,     // a projection [out_features, in_features], lm_head included
    kNorm,       // an RMSNorm weight [1, n]; loaders keep it F32 (the ops read f32)
    kBias,       // a projection bias [1, out_features]; loaders keep it F32
};

struct WeightSpec {
    std::string name;  // HF name, e.g. "model.layers.0.self_attn.q_proj.weight"
    int64_t rows = 0;
    int64_t cols = 0;
    WeightRole role = WeightRole::kLinear;
};

// In a fixed order: embedding, then per layer norms/attention/MLP, then the final norm and
// lm_head (absent when the embeddings are tied). Biases: q/k/v (and o, except for Qwen2) when
// config.attention_bias; q_norm/k_norm [1, head_dim] when config.qk_norm.
std::vector<WeightSpec> required_weights(const ModelConfig& config);

// Every required tensor exists with its shape; norms and biases are float (F32, F16, BF16).
// The error names the first tensor that fails.
Status check_weights(const ModelConfig& config, const WeightStore& weights);

}  // namespace se
