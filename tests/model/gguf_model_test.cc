#include "model/gguf_model.h"

#include <gtest/gtest.h>

#include "model/required_weights.h"
#include "support/test_files.h"
#include "support/tiny_models.h"

namespace se {
namespace {

using testing::GgufWriter;
using testing::TempDir;

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

Expected<GgufModel> load_writer(const TempDir& dir, const GgufWriter& w) {
    const std::string path = dir.file("model.gguf");
    w.write(path);
    return load_gguf_model(path);
}

TEST(GgufModelTest, LoadsLlamaUnderHfNames) {
    TempDir dir;
    auto model = load_writer(dir, testing::tiny_gguf({}));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const WeightStore& w = model->weights;
    EXPECT_EQ(w.tensors().size(), 1u + 9u * testing::kTinyLayers + 2u);
    auto embed = w.get("model.embed_tokens.weight", testing::kTinyVocab, testing::kTinyHidden);
    ASSERT_TRUE(embed.ok()) << embed.status().to_string();
    EXPECT_EQ(embed->dtype, DType::kQ8_0);
    EXPECT_EQ(w.get("model.layers.1.self_attn.q_proj.weight")->dtype, DType::kQ4_1);
    EXPECT_EQ(w.get("model.layers.1.self_attn.k_proj.weight")->dtype, DType::kQ4_0);
    EXPECT_EQ(w.get("model.layers.1.self_attn.v_proj.weight")->dtype, DType::kF16);
    EXPECT_EQ(w.get("model.layers.1.self_attn.o_proj.weight")->dtype, DType::kBF16);
    EXPECT_EQ(w.get("model.layers.0.mlp.down_proj.weight")->rows, testing::kTinyHidden);
    EXPECT_EQ(w.get("model.layers.0.mlp.down_proj.weight")->cols, testing::kTinyInter);
    EXPECT_EQ(w.get("model.layers.0.input_layernorm.weight")->rows, 1);
    EXPECT_TRUE(w.contains("lm_head.weight"));
    EXPECT_TRUE(w.contains("model.norm.weight"));
    // The bytes are the file's: the first tensor starts with the writer's pattern 0, 7, 14.
    const auto* bytes = static_cast<const uint8_t*>(embed->data);
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[2], 14);
    EXPECT_TRUE(check_weights(model->config, w).ok()) << check_weights(model->config, w).message();
    ASSERT_TRUE(model->vocab.has_value());
    EXPECT_EQ(model->vocab->tokens.size(), static_cast<size_t>(testing::kTinyVocab));
    EXPECT_EQ(model->chat_template, "{{ messages }}");
}

TEST(GgufModelTest, WeightsOutliveTheLoaderCall) {
    TempDir dir;
    WeightStore weights;
    std::vector<uint8_t> expected;
    {
        auto model = load_writer(dir, testing::tiny_gguf({}));
        ASSERT_TRUE(model.ok());
        const auto* data =
            static_cast<const uint8_t*>(model->weights.get("model.norm.weight")->data);
        expected.assign(data, data + 16);
        weights = std::move(model->weights);
    }
    std::filesystem::remove(dir.file("model.gguf"));  // the mapping keeps the data
    const auto* data = static_cast<const uint8_t*>(weights.get("model.norm.weight")->data);
    EXPECT_EQ(std::vector<uint8_t>(data, data + 16), expected);
}

TEST(GgufModelTest, Qwen2AndQwen3Tensors) {
    TempDir dir;
    auto qwen2 = load_writer(dir, testing::tiny_gguf({.arch = "qwen2"}));
    ASSERT_TRUE(qwen2.ok()) << qwen2.status().to_string();
    EXPECT_EQ(qwen2->weights.get("model.layers.0.self_attn.k_proj.bias")->cols,
              testing::kTinyKvHeads * testing::kTinyHeadDim);
    EXPECT_TRUE(check_weights(qwen2->config, qwen2->weights).ok());

    auto qwen3 = load_writer(dir, testing::tiny_gguf({.arch = "qwen3", .tied = true}));
    ASSERT_TRUE(qwen3.ok()) << qwen3.status().to_string();
    EXPECT_EQ(qwen3->weights.get("model.layers.1.self_attn.q_norm.weight")->cols,
              testing::kTinyHeadDim);
    EXPECT_FALSE(qwen3->weights.contains("lm_head.weight"));
    EXPECT_TRUE(check_weights(qwen3->config, qwen3->weights).ok());
}

TEST(GgufModelTest, RopeFreqsGoesToConfigNotWeights) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_f32_tensor("rope_freqs.weight", {testing::kTinyHeadDim / 2},
                     std::vector<float>(testing::kTinyHeadDim / 2, 2.0f));
    TempDir dir;
    auto model = load_writer(dir, w);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ(model->config.rope_freq_factors.size(), testing::kTinyHeadDim / 2u);
    EXPECT_FALSE(model->weights.contains("rope_freqs.weight"));
}

TEST(GgufModelTest, UnknownTensorIsUnsupported) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_tensor("blk.0.ffn_gate_exps.weight", testing::kGgmlF32, {64, 2});
    TempDir dir;
    auto model = load_writer(dir, w);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(model.status().message(), "blk.0.ffn_gate_exps.weight"));
}

TEST(GgufModelTest, LayerPastBlockCount) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_tensor("blk.7.attn_norm.weight", testing::kGgmlF32, {testing::kTinyHidden});
    TempDir dir;
    auto model = load_writer(dir, w);
    ASSERT_FALSE(model.ok());
    EXPECT_TRUE(contains(model.status().message(), "blk.7.attn_norm.weight"));
}

TEST(GgufModelTest, UnknownArchitecture) {
    GgufWriter w;
    w.add_string("general.architecture", "gptneox");
    TempDir dir;
    auto model = load_writer(dir, w);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(model.status().message(), "gptneox"));
}

TEST(GgufModelTest, MetadataOnly) {
    TempDir dir;
    testing::tiny_gguf({}).write(dir.file("model.gguf"));
    auto model = load_gguf_metadata(dir.file("model.gguf"));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ(model->config.num_layers, testing::kTinyLayers);
    EXPECT_TRUE(model->weights.tensors().empty());
    EXPECT_TRUE(model->vocab.has_value());
}

}  // namespace
}  // namespace se
