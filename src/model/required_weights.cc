#include "model/required_weights.h"

#include <fmt/core.h>

#include "model/weight_convert.h"

namespace se {
namespace {

void add_attention(const ModelConfig& c, const std::string& p, std::vector<WeightSpec>& out) {
    const int64_t q_out = static_cast<int64_t>(c.num_heads) * c.head_dim;
    const int64_t kv_out = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
    out.push_back({p + "self_attn.q_proj.weight", q_out, c.hidden_size, WeightRole::kLinear});
    out.push_back({p + "self_attn.k_proj.weight", kv_out, c.hidden_size, WeightRole::kLinear});
    out.push_back({p + "self_attn.v_proj.weight", kv_out, c.hidden_size, WeightRole::kLinear});
    out.push_back({p + "self_attn.o_proj.weight", c.hidden_size, q_out, WeightRole::kLinear});
    if (c.attention_bias) {
        out.push_back({p + "self_attn.q_proj.bias", 1, q_out, WeightRole::kBias});
        out.push_back({p + "self_attn.k_proj.bias", 1, kv_out, WeightRole::kBias});
        out.push_back({p + "self_attn.v_proj.bias", 1, kv_out, WeightRole::kBias});
        // Qwen2 hard-codes bias=False on o_proj; Llama and Qwen3 follow attention_bias.
        if (c.family != ArchFamily::kQwen2)
            out.push_back({p + "self_attn.o_proj.bias", 1, c.hidden_size, WeightRole::kBias});
    }
    if (c.qk_norm) {
        out.push_back({p + "self_attn.q_norm.weight", 1, c.head_dim, WeightRole::kNorm});
        out.push_back({p + "self_attn.k_norm.weight", 1, c.head_dim, WeightRole::kNorm});
    }
}

void add_layer(const ModelConfig& c, int32_t layer, std::vector<WeightSpec>& out) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    out.push_back({p + "input_layernorm.weight", 1, c.hidden_size, WeightRole::kNorm});
    add_attention(c, p, out);
    out.push_back({p + "post_attention_layernorm.weight", 1, c.hidden_size, WeightRole::kNorm});
    out.push_back(
        {p + "mlp.gate_proj.weight", c.intermediate_size, c.hidden_size, WeightRole::kLinear});
    out.push_back(
        {p + "mlp.up_proj.weight", c.intermediate_size, c.hidden_size, WeightRole::kLinear});
    out.push_back(
        {p + "mlp.down_proj.weight", c.hidden_size, c.intermediate_size, WeightRole::kLinear});
}

}  // namespace

std::vector<WeightSpec> required_weights(const ModelConfig& c) {
    std::vector<WeightSpec> out;
    out.push_back(
        {"model.embed_tokens.weight", c.vocab_size, c.hidden_size, WeightRole::kEmbedding});
    for (int32_t layer = 0; layer < c.num_layers; ++layer) add_layer(c, layer, out);
    out.push_back({"model.norm.weight", 1, c.hidden_size, WeightRole::kNorm});
    if (!c.tie_word_embeddings)
        out.push_back({"lm_head.weight", c.vocab_size, c.hidden_size, WeightRole::kLinear});
    return out;
}

Status check_weights(const ModelConfig& config, const WeightStore& weights) {
    for (const WeightSpec& spec : required_weights(config)) {
        SE_ASSIGN_OR_RETURN(const ConstTensorView view,
                            weights.get(spec.name, spec.rows, spec.cols));
        const bool vector_role = spec.role == WeightRole::kNorm || spec.role == WeightRole::kBias;
        if (vector_role && !dtype_is_float(view.dtype)) {
            return unsupported(
                fmt::format("weight '{}' is {}; norm weights and biases must be "
                            "F32, F16 or BF16",
                            spec.name, dtype_name(view.dtype)));
        }
    }
    return {};
}

}  // namespace se
