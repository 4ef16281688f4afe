// The weights of a Llama-family decoder (Llama 3.x, SmolLM2, Qwen2.5, Qwen3) bound by name from a
// WeightStore, with shapes checked. Projections stay in their stored dtype (quantized or 16-bit);
// norm weights and biases are F32 (the loaders store them so).
#pragma once

#include <vector>

#include "core/expected.h"
#include "core/tensor_view.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace se {

struct DecoderLayerWeights {
    ConstTensorView input_norm;  // f32 [1, hidden]
    ConstTensorView q_proj;      // any [num_heads * head_dim, hidden]
    ConstTensorView k_proj;      // any [num_kv_heads * head_dim, hidden]
    ConstTensorView v_proj;      // any [num_kv_heads * head_dim, hidden]
    ConstTensorView q_bias;      // f32 [1, num_heads * head_dim], empty unless attention_bias
    ConstTensorView k_bias;      // f32 [1, num_kv_heads * head_dim], empty unless attention_bias
    ConstTensorView v_bias;      // f32 [1, num_kv_heads * head_dim], empty unless attention_bias
    ConstTensorView q_norm;      // f32 [1, head_dim], empty unless qk_norm
    ConstTensorView k_norm;      // f32 [1, head_dim], empty unless qk_norm
    ConstTensorView o_proj;      // any [hidden, num_heads * head_dim]
    ConstTensorView o_bias;      // f32 [1, hidden], empty unless attention_bias (not Qwen2)
    ConstTensorView post_norm;   // f32 [1, hidden]
    ConstTensorView gate_proj;   // any [intermediate, hidden]
    ConstTensorView up_proj;     // any [intermediate, hidden]
    ConstTensorView down_proj;   // any [hidden, intermediate]
};

struct DecoderWeights {
    ConstTensorView embed;  // any [vocab, hidden]
    std::vector<DecoderLayerWeights> layers;
    ConstTensorView final_norm;  // f32 [1, hidden]
    ConstTensorView lm_head;     // any [vocab, hidden]; the embedding when tied
};

// Errors name the missing or misshapen tensor.
Expected<DecoderWeights> bind_decoder_weights(const ModelConfig& config, const WeightStore& store);

}  // namespace se
