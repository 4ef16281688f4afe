#include "model/gguf_tensor_names.h"

#include <gtest/gtest.h>

namespace se {
namespace {

std::string mapped(std::string_view name) {
    const std::optional<HfTensorName> hf = hf_tensor_name(name);
    return hf ? hf->name : "<none>";
}

TEST(GgufTensorNamesTest, TopLevel) {
    EXPECT_EQ(mapped("token_embd.weight"), "model.embed_tokens.weight");
    EXPECT_EQ(mapped("output_norm.weight"), "model.norm.weight");
    EXPECT_EQ(mapped("output.weight"), "lm_head.weight");
    EXPECT_FALSE(hf_tensor_name("token_embd.weight")->layer.has_value());
}

TEST(GgufTensorNamesTest, InBlock) {
    EXPECT_EQ(mapped("blk.0.attn_norm.weight"), "model.layers.0.input_layernorm.weight");
    EXPECT_EQ(mapped("blk.12.ffn_norm.weight"), "model.layers.12.post_attention_layernorm.weight");
    EXPECT_EQ(mapped("blk.3.attn_q.weight"), "model.layers.3.self_attn.q_proj.weight");
    EXPECT_EQ(mapped("blk.3.attn_k.bias"), "model.layers.3.self_attn.k_proj.bias");
    EXPECT_EQ(mapped("blk.3.attn_v.weight"), "model.layers.3.self_attn.v_proj.weight");
    EXPECT_EQ(mapped("blk.3.attn_output.weight"), "model.layers.3.self_attn.o_proj.weight");
    EXPECT_EQ(mapped("blk.3.attn_q_norm.weight"), "model.layers.3.self_attn.q_norm.weight");
    EXPECT_EQ(mapped("blk.3.attn_k_norm.weight"), "model.layers.3.self_attn.k_norm.weight");
    EXPECT_EQ(mapped("blk.3.ffn_gate.weight"), "model.layers.3.mlp.gate_proj.weight");
    EXPECT_EQ(mapped("blk.3.ffn_up.weight"), "model.layers.3.mlp.up_proj.weight");
    EXPECT_EQ(mapped("blk.3.ffn_down.weight"), "model.layers.3.mlp.down_proj.weight");
    EXPECT_EQ(hf_tensor_name("blk.29.ffn_up.weight")->layer, 29);
}

TEST(GgufTensorNamesTest, UnknownNames) {
    EXPECT_EQ(mapped("rope_freqs.weight"), "<none>");
    EXPECT_EQ(mapped("blk.0.ffn_gate_exps.weight"), "<none>");
    EXPECT_EQ(mapped("blk.x.attn_q.weight"), "<none>");
    EXPECT_EQ(mapped("blk.-1.attn_q.weight"), "<none>");
    EXPECT_EQ(mapped("blk.1"), "<none>");
    EXPECT_EQ(mapped("blk.1attn_q.weight"), "<none>");
}

}  // namespace
}  // namespace se
