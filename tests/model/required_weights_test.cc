#include "model/required_weights.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/dummy_weights.h"

namespace se {
namespace {

ModelConfig config(ArchFamily family) {
    ModelConfig c;
    c.family = family;
    c.vocab_size = 32;
    c.hidden_size = 64;
    c.intermediate_size = 96;
    c.num_layers = 2;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 32;  // heads * head_dim != hidden: shapes must follow head_dim
    c.max_position_embeddings = 128;
    c.attention_bias = family == ArchFamily::kQwen2;
    c.qk_norm = family == ArchFamily::kQwen3;
    return c;
}

const WeightSpec* find(const std::vector<WeightSpec>& specs, const std::string& name) {
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const WeightSpec& s) { return s.name == name; });
    return it == specs.end() ? nullptr : &*it;
}

void expect_shape(const std::vector<WeightSpec>& specs, const std::string& name, int64_t rows,
                  int64_t cols) {
    const WeightSpec* s = find(specs, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->rows, rows) << name;
    EXPECT_EQ(s->cols, cols) << name;
}

TEST(RequiredWeightsTest, LlamaShapes) {
    const std::vector<WeightSpec> specs = required_weights(config(ArchFamily::kLlama));
    EXPECT_EQ(specs.size(), 1u + 2u * 9u + 2u);
    expect_shape(specs, "model.embed_tokens.weight", 32, 64);
    expect_shape(specs, "model.layers.1.self_attn.q_proj.weight", 128, 64);
    expect_shape(specs, "model.layers.1.self_attn.k_proj.weight", 64, 64);
    expect_shape(specs, "model.layers.1.self_attn.v_proj.weight", 64, 64);
    expect_shape(specs, "model.layers.1.self_attn.o_proj.weight", 64, 128);
    expect_shape(specs, "model.layers.0.mlp.gate_proj.weight", 96, 64);
    expect_shape(specs, "model.layers.0.mlp.up_proj.weight", 96, 64);
    expect_shape(specs, "model.layers.0.mlp.down_proj.weight", 64, 96);
    expect_shape(specs, "model.layers.0.input_layernorm.weight", 1, 64);
    expect_shape(specs, "model.layers.0.post_attention_layernorm.weight", 1, 64);
    expect_shape(specs, "model.norm.weight", 1, 64);
    expect_shape(specs, "lm_head.weight", 32, 64);
    EXPECT_EQ(find(specs, "model.layers.0.self_attn.q_proj.bias"), nullptr);
}

TEST(RequiredWeightsTest, TiedHasNoLmHead) {
    ModelConfig c = config(ArchFamily::kLlama);
    c.tie_word_embeddings = true;
    EXPECT_EQ(find(required_weights(c), "lm_head.weight"), nullptr);
}

TEST(RequiredWeightsTest, Qwen2BiasesWithoutOutputBias) {
    const std::vector<WeightSpec> specs = required_weights(config(ArchFamily::kQwen2));
    expect_shape(specs, "model.layers.0.self_attn.q_proj.bias", 1, 128);
    expect_shape(specs, "model.layers.0.self_attn.k_proj.bias", 1, 64);
    expect_shape(specs, "model.layers.0.self_attn.v_proj.bias", 1, 64);
    EXPECT_EQ(find(specs, "model.layers.0.self_attn.o_proj.bias"), nullptr);
    EXPECT_EQ(find(specs, "model.layers.0.self_attn.q_proj.bias")->role, WeightRole::kBias);
}

TEST(RequiredWeightsTest, LlamaWithAttentionBiasHasOutputBias) {
    ModelConfig c = config(ArchFamily::kLlama);
    c.attention_bias = true;
    expect_shape(required_weights(c), "model.layers.1.self_attn.o_proj.bias", 1, 64);
}

TEST(RequiredWeightsTest, Qwen3QkNorms) {
    const std::vector<WeightSpec> specs = required_weights(config(ArchFamily::kQwen3));
    expect_shape(specs, "model.layers.0.self_attn.q_norm.weight", 1, 32);
    expect_shape(specs, "model.layers.0.self_attn.k_norm.weight", 1, 32);
    EXPECT_EQ(find(specs, "model.layers.0.self_attn.k_norm.weight")->role, WeightRole::kNorm);
}

TEST(RequiredWeightsTest, CheckWeightsNamesMissingTensor) {
    const ModelConfig c = config(ArchFamily::kQwen3);
    auto full = make_dummy_weights(c, {});
    ASSERT_TRUE(full.ok()) << full.status().to_string();
    EXPECT_TRUE(check_weights(c, *full).ok());

    WeightStore partial;
    for (const auto& [name, view] : full->tensors()) {
        if (name != "model.layers.1.self_attn.k_norm.weight") {
            ASSERT_TRUE(partial.add(name, view).ok());
        }
    }
    const Status status = check_weights(c, partial);
    EXPECT_EQ(status.code(), StatusCode::kNotFound);
    EXPECT_NE(status.message().find("model.layers.1.self_attn.k_norm.weight"), std::string::npos)
        << status.message();
}

TEST(RequiredWeightsTest, CheckWeightsNamesWrongShape) {
    const ModelConfig c = config(ArchFamily::kLlama);
    auto weights = make_dummy_weights(c, {});
    ASSERT_TRUE(weights.ok());
    const ConstTensorView q = *weights->get("model.layers.0.self_attn.q_proj.weight");
    weights->replace("model.layers.0.self_attn.q_proj.weight",
                     ConstTensorView(q.dtype, q.data, 64, 64));
    const Status status = check_weights(c, *weights);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss);
    EXPECT_NE(status.message().find("model.layers.0.self_attn.q_proj.weight"), std::string::npos);
    EXPECT_NE(status.message().find("[128, 64]"), std::string::npos) << status.message();
}

TEST(RequiredWeightsTest, CheckWeightsRejectsQuantizedNorm) {
    const ModelConfig c = config(ArchFamily::kLlama);
    auto weights = make_dummy_weights(c, {});
    ASSERT_TRUE(weights.ok());
    const ConstTensorView norm = *weights->get("model.norm.weight");
    weights->replace("model.norm.weight", ConstTensorView(DType::kQ8_0, norm.data, 1, 64));
    const Status status = check_weights(c, *weights);
    EXPECT_EQ(status.code(), StatusCode::kUnsupported);
    EXPECT_NE(status.message().find("model.norm.weight"), std::string::npos);
}

}  // namespace
}  // namespace se
