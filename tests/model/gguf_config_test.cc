#include "model/gguf_config.h"

#include <gtest/gtest.h>

#include "support/test_files.h"
#include "support/tiny_models.h"

namespace se {
namespace {

using testing::GgufWriter;
using testing::TempDir;
using testing::TinyGgufOptions;

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

Expected<GgufFile> open_writer(const TempDir& dir, const GgufWriter& w) {
    const std::string path = dir.file("model.gguf");
    w.write(path);
    return GgufFile::open(path);
}

TEST(GgufConfigTest, LlamaConfig) {
    TempDir dir;
    auto file = open_writer(dir, testing::tiny_gguf({}));
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto config = gguf_model_config(*file);
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    const ModelConfig& c = *config;
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.family, ArchFamily::kLlama);
    EXPECT_EQ(c.num_layers, testing::kTinyLayers);
    EXPECT_EQ(c.hidden_size, testing::kTinyHidden);
    EXPECT_EQ(c.intermediate_size, testing::kTinyInter);
    EXPECT_EQ(c.num_heads, testing::kTinyHeads);
    EXPECT_EQ(c.num_kv_heads, testing::kTinyKvHeads);
    EXPECT_EQ(c.head_dim, testing::kTinyHeadDim);
    EXPECT_EQ(c.vocab_size, testing::kTinyVocab);
    EXPECT_EQ(c.max_position_embeddings, 256);
    EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
    EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
    EXPECT_EQ(c.rope_style, RopeStyle::kInterleaved);
    EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
    EXPECT_TRUE(c.rope_freq_factors.empty());
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_FALSE(c.attention_bias);
    EXPECT_FALSE(c.qk_norm);
    EXPECT_EQ(c.torch_dtype, DType::kBF16);
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
    EXPECT_TRUE(c.validate().ok());
}

TEST(GgufConfigTest, Qwen2HasBiasesAndNeoxRope) {
    TempDir dir;
    auto file = open_writer(dir, testing::tiny_gguf({.arch = "qwen2"}));
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->family, ArchFamily::kQwen2);
    EXPECT_TRUE(c->attention_bias);
    EXPECT_FALSE(c->qk_norm);
    EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
}

TEST(GgufConfigTest, Qwen3HasQkNorm) {
    TempDir dir;
    auto file = open_writer(dir, testing::tiny_gguf({.arch = "qwen3", .tied = true}));
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->family, ArchFamily::kQwen3);
    EXPECT_TRUE(c->qk_norm);
    EXPECT_FALSE(c->attention_bias);
    EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
    EXPECT_TRUE(c->tie_word_embeddings);
}

TEST(GgufConfigTest, DefaultsForOptionalKeys) {
    GgufWriter w;
    w.add_string("general.architecture", "llama")
        .add_u32("llama.block_count", 1)
        .add_u32("llama.context_length", 64)
        .add_u32("llama.embedding_length", 64)
        .add_u32("llama.feed_forward_length", 128)
        .add_u32("llama.attention.head_count", 4)
        .add_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f)
        .add_tensor("token_embd.weight", testing::kGgmlF32, {64, 10});
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto c = gguf_model_config(*file);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->num_kv_heads, 4);         // head_count
    EXPECT_EQ(c->head_dim, 16);            // embedding / heads
    EXPECT_FLOAT_EQ(c->rope_theta, 1e4f);  // 10000
    EXPECT_EQ(c->vocab_size, 10);          // rows of token_embd
    EXPECT_TRUE(c->tie_word_embeddings);
    EXPECT_FALSE(c->bos_token_id.has_value());
    EXPECT_TRUE(c->eos_token_ids.empty());
}

TEST(GgufConfigTest, EndOfTurnStopsToo) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_u32("tokenizer.ggml.eot_token_id", 5);
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2, 5}));
}

TEST(GgufConfigTest, RopeFreqsTensorBecomesFactors) {
    std::vector<float> factors(testing::kTinyHeadDim / 2);
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i);
    GgufWriter w = testing::tiny_gguf({});
    w.add_f32_tensor("rope_freqs.weight", {testing::kTinyHeadDim / 2}, factors);
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->rope_freq_factors, factors);
}

TEST(GgufConfigTest, LinearRopeScaling) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_string("llama.rope.scaling.type", "linear").add_f32("llama.rope.scaling.factor", 4.0f);
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
    EXPECT_FLOAT_EQ(c->rope_scaling.factor, 4.0f);
}

TEST(GgufConfigTest, YarnScalingIsUnsupported) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_string("llama.rope.scaling.type", "yarn");
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(c.status().message(), "yarn"));
}

TEST(GgufConfigTest, UnknownArchitectureNamesIt) {
    GgufWriter w;
    w.add_string("general.architecture", "mamba");
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(c.status().message(), "'mamba'")) << c.status().message();
}

TEST(GgufConfigTest, MissingKeyNamesIt) {
    GgufWriter w;
    w.add_string("general.architecture", "qwen2").add_u32("qwen2.block_count", 2);
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(c.status().message(), "qwen2.embedding_length"));
}

TEST(GgufConfigTest, WrongKeyTypeNamesIt) {
    GgufWriter w;
    w.add_string("general.architecture", "llama").add_string("llama.block_count", "thirty");
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto c = gguf_model_config(*file);
    ASSERT_FALSE(c.ok());
    EXPECT_TRUE(contains(c.status().message(), "llama.block_count"));
    EXPECT_TRUE(contains(c.status().message(), "integer"));
}

TEST(GgufConfigTest, Vocab) {
    TempDir dir;
    auto file = open_writer(dir, testing::tiny_gguf({}));
    ASSERT_TRUE(file.ok());
    auto vocab = gguf_vocab(*file);
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    ASSERT_TRUE(vocab->has_value());
    const GgufVocab& v = **vocab;
    EXPECT_EQ(v.model, "gpt2");
    EXPECT_EQ(v.pre, "smollm");
    ASSERT_EQ(v.tokens.size(), static_cast<size_t>(testing::kTinyVocab));
    EXPECT_EQ(v.tokens[5], "t5");
    ASSERT_EQ(v.token_types.size(), v.tokens.size());
    EXPECT_EQ(v.token_types[0], static_cast<int32_t>(GgufTokenType::kControl));
    EXPECT_EQ(v.token_types[5], static_cast<int32_t>(GgufTokenType::kNormal));
    EXPECT_EQ(v.merges, (std::vector<std::string>{"t 1", "t 2"}));
    EXPECT_EQ(v.bos_id, 1);
    EXPECT_EQ(v.eos_id, 2);
    EXPECT_EQ(v.pad_id, 2);
    EXPECT_FALSE(v.unk_id.has_value());
    EXPECT_FALSE(v.add_bos);
}

TEST(GgufConfigTest, NoTokenizerGivesNoVocab) {
    TempDir dir;
    auto file = open_writer(dir, testing::tiny_gguf({.with_tokenizer = false}));
    ASSERT_TRUE(file.ok());
    auto vocab = gguf_vocab(*file);
    ASSERT_TRUE(vocab.ok());
    EXPECT_FALSE(vocab->has_value());
}

TEST(GgufConfigTest, TokenIdOutsideVocab) {
    GgufWriter w = testing::tiny_gguf({});
    w.add_u32("tokenizer.ggml.unknown_token_id", 1000);
    TempDir dir;
    auto file = open_writer(dir, w);
    ASSERT_TRUE(file.ok());
    auto vocab = gguf_vocab(*file);
    ASSERT_FALSE(vocab.ok());
    EXPECT_TRUE(contains(vocab.status().message(), "tokenizer.ggml.unknown_token_id"));
}

}  // namespace
}  // namespace se
