#include "model/dummy_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "model/required_weights.h"

namespace se {
namespace {

ModelConfig tiny_qwen2() {
    ModelConfig c;
    c.family = ArchFamily::kQwen2;
    c.vocab_size = 50;
    c.hidden_size = 32;
    c.intermediate_size = 48;
    c.num_layers = 2;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 8;
    c.max_position_embeddings = 64;
    c.attention_bias = true;
    return c;
}

bool same_bytes(const WeightStore& a, const WeightStore& b) {
    if (a.tensors().size() != b.tensors().size()) return false;
    for (const auto& [name, va] : a.tensors()) {
        const ConstTensorView vb = *b.get(name);
        if (va.dtype != vb.dtype || va.rows != vb.rows || va.cols != vb.cols ||
            std::memcmp(va.data, vb.data, static_cast<size_t>(va.rows * va.row_bytes())) != 0)
            return false;
    }
    return true;
}

TEST(DummyWeightsTest, SameSeedSameBytes) {
    auto a = make_dummy_weights(tiny_qwen2(), {.seed = 7});
    auto b = make_dummy_weights(tiny_qwen2(), {.seed = 7});
    auto c = make_dummy_weights(tiny_qwen2(), {.seed = 8});
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_TRUE(same_bytes(*a, *b));
    EXPECT_FALSE(same_bytes(*a, *c));
}

TEST(DummyWeightsTest, EveryRequiredTensorWithItsRole) {
    const ModelConfig config = tiny_qwen2();
    auto w = make_dummy_weights(config, {});
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    EXPECT_TRUE(check_weights(config, *w).ok());
    EXPECT_EQ(w->tensors().size(), required_weights(config).size());

    const ConstTensorView q = *w->get("model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(q.dtype, DType::kBF16);
    const auto* bits = static_cast<const uint16_t*>(q.data);
    float sum_abs = 0.0f;
    for (int64_t i = 0; i < q.num_elems(); ++i) {
        const float v = bf16_to_f32(bits[i]);
        ASSERT_LE(std::abs(v), 0.02f * (1.0f + 0x1p-8f));  // bf16 rounding
        sum_abs += std::abs(v);
    }
    EXPECT_GT(sum_abs / static_cast<float>(q.num_elems()), 0.005f);  // not all zeros
    EXPECT_NE(bits[0], bits[1]);

    const ConstTensorView norm = *w->get("model.layers.1.input_layernorm.weight");
    EXPECT_EQ(norm.dtype, DType::kF32);
    for (int64_t i = 0; i < norm.cols; ++i) EXPECT_EQ(norm.f32()[i], 1.0f);

    const ConstTensorView bias = *w->get("model.layers.1.self_attn.k_proj.bias");
    EXPECT_EQ(bias.dtype, DType::kF32);
    for (int64_t i = 0; i < bias.cols; ++i) EXPECT_LE(std::abs(bias.f32()[i]), 0.01f);
}

TEST(DummyWeightsTest, RowsDifferAndTensorsDiffer) {
    auto w = make_dummy_weights(tiny_qwen2(), {.dtype = DType::kF32});
    ASSERT_TRUE(w.ok());
    const ConstTensorView gate = *w->get("model.layers.0.mlp.gate_proj.weight");
    const ConstTensorView up = *w->get("model.layers.0.mlp.up_proj.weight");
    EXPECT_NE(gate.f32()[0], gate.f32()[gate.cols]);  // row 1 is not a copy of row 0
    EXPECT_NE(std::memcmp(gate.data, up.data, 64), 0);
}

TEST(DummyWeightsTest, F16OnRequestAndProgress) {
    std::vector<float> fractions;
    auto w = make_dummy_weights(tiny_qwen2(), {.dtype = DType::kF16, .on_progress = [&](float f) {
                                                   fractions.push_back(f);
                                               }});
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->get("model.embed_tokens.weight")->dtype, DType::kF16);
    ASSERT_EQ(fractions.size(), required_weights(tiny_qwen2()).size());
    EXPECT_FLOAT_EQ(fractions.back(), 1.0f);
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
}

TEST(DummyWeightsTest, RejectsQuantizedDtypeAndBadConfig) {
    auto q = make_dummy_weights(tiny_qwen2(), {.dtype = DType::kQ4_0});
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    ModelConfig bad = tiny_qwen2();
    bad.num_kv_heads = 3;
    auto b = make_dummy_weights(bad, {});
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find("num_key_value_heads"), std::string::npos);
}

}  // namespace
}  // namespace se
