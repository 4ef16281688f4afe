// The default model (SmolLM2-135M-Instruct, Q4_1 GGUF) as scripts/fetch-model installs it. This
// test fails, rather than skips, when the file is missing: run scripts/fetch-model.
#include <gtest/gtest.h>

#include "model/model_loader.h"
#include "model/model_resolver.h"

namespace se {
namespace {

TEST(DefaultModelTest, SmolLM2LoadsWithItsConfigAndVocab) {
    auto path = resolve_model_path(std::string(kDefaultModelAlias));
    ASSERT_TRUE(path.ok()) << "default model missing: " << path.status().to_string();
    auto model = load_model({.model = *path});
    ASSERT_TRUE(model.ok()) << *path << ": " << model.status().to_string();

    const ModelConfig& c = model->config;
    EXPECT_EQ(c.family, ArchFamily::kLlama);
    EXPECT_EQ(c.num_layers, 30);
    EXPECT_EQ(c.hidden_size, 576);
    EXPECT_EQ(c.num_heads, 9);
    EXPECT_EQ(c.num_kv_heads, 3);
    EXPECT_EQ(c.head_dim, 64);
    EXPECT_EQ(c.intermediate_size, 1536);
    EXPECT_EQ(c.vocab_size, 49152);
    EXPECT_EQ(c.max_position_embeddings, 8192);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_FLOAT_EQ(c.rope_theta, 100000.0f);
    EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
    EXPECT_EQ(c.rope_style, RopeStyle::kInterleaved);
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});

    const WeightStore& w = model->weights;
    EXPECT_EQ(w.get("model.embed_tokens.weight", 49152, 576)->dtype, DType::kQ8_0);
    EXPECT_EQ(w.get("model.layers.0.self_attn.q_proj.weight", 576, 576)->dtype, DType::kQ4_1);
    EXPECT_EQ(w.get("model.layers.29.self_attn.k_proj.weight", 192, 576)->dtype, DType::kQ4_1);
    EXPECT_EQ(w.get("model.layers.29.mlp.down_proj.weight", 576, 1536)->dtype, DType::kQ4_1);
    EXPECT_EQ(w.get("model.norm.weight", 1, 576)->dtype, DType::kF32);
    EXPECT_FALSE(w.contains("lm_head.weight"));
    EXPECT_EQ(w.tensors().size(), 272u);

    ASSERT_TRUE(model->gguf_vocab.has_value());
    const GgufVocab& v = *model->gguf_vocab;
    EXPECT_EQ(v.model, "gpt2");
    EXPECT_EQ(v.pre, "smollm");
    EXPECT_EQ(v.tokens.size(), 49152u);
    EXPECT_EQ(v.token_types.size(), 49152u);
    EXPECT_EQ(v.merges.size(), 48900u);
    EXPECT_EQ(v.tokens[1], "<|im_start|>");
    EXPECT_EQ(v.bos_id, 1);
    EXPECT_EQ(v.eos_id, 2);
    EXPECT_FALSE(model->chat_template.empty());
    EXPECT_NE(model->chat_template.find("<|im_start|>"), std::string::npos);
}

}  // namespace
}  // namespace se
