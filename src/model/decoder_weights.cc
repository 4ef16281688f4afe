#include "model/decoder_weights.h"

#include <fmt/core.h>

namespace se {
namespace {

class Binder {
  public:
    explicit Binder(const WeightStore& store) : store_(store) {}

    Expected<ConstTensorView> matrix(const std::string& name, int64_t rows, int64_t cols) {
        return store_.get(name, rows, cols);
    }

    // A [1, cols] vector; the loaders keep norm weights and biases in F32.
    Expected<ConstTensorView> vector(const std::string& name, int64_t cols) {
        SE_ASSIGN_OR_RETURN(ConstTensorView v, store_.get(name, 1, cols));
        if (v.dtype != DType::kF32) {
            return unsupported(
                fmt::format("weight '{}' has dtype {}; norm weights and biases "
                            "must be F32",
                            name, dtype_name(v.dtype)));
        }
        return v;
    }

  private:
    const WeightStore& store_;
};

Expected<DecoderLayerWeights> bind_layer(const ModelConfig& c, int32_t layer, Binder& b) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    const int64_t d = c.hidden_size;
    const int64_t q_dim = int64_t{c.num_heads} * c.head_dim;
    const int64_t kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
    DecoderLayerWeights w;
    SE_ASSIGN_OR_RETURN(w.input_norm, b.vector(p + "input_layernorm.weight", d));
    SE_ASSIGN_OR_RETURN(w.q_proj, b.matrix(p + "self_attn.q_proj.weight", q_dim, d));
    SE_ASSIGN_OR_RETURN(w.k_proj, b.matrix(p + "self_attn.k_proj.weight", kv_dim, d));
    SE_ASSIGN_OR_RETURN(w.v_proj, b.matrix(p + "self_attn.v_proj.weight", kv_dim, d));
    if (c.attention_bias) {
        SE_ASSIGN_OR_RETURN(w.q_bias, b.vector(p + "self_attn.q_proj.bias", q_dim));
        SE_ASSIGN_OR_RETURN(w.k_bias, b.vector(p + "self_attn.k_proj.bias", kv_dim));
        SE_ASSIGN_OR_RETURN(w.v_bias, b.vector(p + "self_attn.v_proj.bias", kv_dim));
    }
    if (c.qk_norm) {
        SE_ASSIGN_OR_RETURN(w.q_norm, b.vector(p + "self_attn.q_norm.weight", c.head_dim));
        SE_ASSIGN_OR_RETURN(w.k_norm, b.vector(p + "self_attn.k_norm.weight", c.head_dim));
    }
    SE_ASSIGN_OR_RETURN(w.o_proj, b.matrix(p + "self_attn.o_proj.weight", d, q_dim));
    // transformers gives o_proj a bias with attention_bias, except Qwen2 (q/k/v only).
    if (c.attention_bias && c.family != ArchFamily::kQwen2) {
        SE_ASSIGN_OR_RETURN(w.o_bias, b.vector(p + "self_attn.o_proj.bias", d));
    }
    SE_ASSIGN_OR_RETURN(w.post_norm, b.vector(p + "post_attention_layernorm.weight", d));
    SE_ASSIGN_OR_RETURN(w.gate_proj, b.matrix(p + "mlp.gate_proj.weight", c.intermediate_size, d));
    SE_ASSIGN_OR_RETURN(w.up_proj, b.matrix(p + "mlp.up_proj.weight", c.intermediate_size, d));
    SE_ASSIGN_OR_RETURN(w.down_proj, b.matrix(p + "mlp.down_proj.weight", d, c.intermediate_size));
    return w;
}

}  // namespace

Expected<DecoderWeights> bind_decoder_weights(const ModelConfig& config, const WeightStore& store) {
    DecoderWeights w;
    Binder b(store);
    SE_ASSIGN_OR_RETURN(
        w.embed, b.matrix("model.embed_tokens.weight", config.vocab_size, config.hidden_size));
    w.layers.reserve(static_cast<size_t>(config.num_layers));
    for (int32_t layer = 0; layer < config.num_layers; ++layer) {
        SE_ASSIGN_OR_RETURN(DecoderLayerWeights lw, bind_layer(config, layer, b));
        w.layers.push_back(lw);
    }
    SE_ASSIGN_OR_RETURN(w.final_norm, b.vector("model.norm.weight", config.hidden_size));
    if (config.tie_word_embeddings) {
        w.lm_head = w.embed;
    } else {
        SE_ASSIGN_OR_RETURN(w.lm_head,
                            b.matrix("lm_head.weight", config.vocab_size, config.hidden_size));
    }
    return w;
}

}  // namespace se
