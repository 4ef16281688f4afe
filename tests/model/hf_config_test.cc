#include "model/hf_config.h"

#include <gtest/gtest.h>

#include "support/tiny_models.h"

namespace se {
namespace {

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

Expected<ModelConfig> parse(const nlohmann::json& json) {
    return parse_hf_config(json.dump(), "/models/x/config.json");
}

void expect_error(const nlohmann::json& json, StatusCode code,
                  std::vector<std::string_view> needles) {
    auto c = parse(json);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), code) << c.status().to_string();
    for (std::string_view needle : needles)
        EXPECT_TRUE(contains(c.status().message(), needle)) << c.status().to_string();
}

TEST(HfConfigTest, Llama) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    auto c = parse(j);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->architecture, "LlamaForCausalLM");
    EXPECT_EQ(c->family, ArchFamily::kLlama);
    EXPECT_EQ(c->hidden_size, testing::kTinyHidden);
    EXPECT_EQ(c->intermediate_size, testing::kTinyInter);
    EXPECT_EQ(c->num_layers, testing::kTinyLayers);
    EXPECT_EQ(c->num_heads, testing::kTinyHeads);
    EXPECT_EQ(c->num_kv_heads, testing::kTinyKvHeads);
    EXPECT_EQ(c->head_dim, testing::kTinyHeadDim);
    EXPECT_EQ(c->vocab_size, testing::kTinyVocab);
    EXPECT_EQ(c->max_position_embeddings, 256);
    EXPECT_FLOAT_EQ(c->rms_norm_eps, 1e-6f);
    EXPECT_FLOAT_EQ(c->rope_theta, 10000.0f);
    EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
    EXPECT_EQ(c->torch_dtype, DType::kF32);
    EXPECT_EQ(c->bos_token_id, 1);
    EXPECT_EQ(c->eos_token_ids, std::vector<int32_t>{2});
    EXPECT_FALSE(c->attention_bias);
    EXPECT_FALSE(c->qk_norm);
    EXPECT_FALSE(c->tie_word_embeddings);
}

TEST(HfConfigTest, DefaultsAndNullHeadDim) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j.erase("num_key_value_heads");
    j.erase("rope_theta");
    j.erase("tie_word_embeddings");
    j.erase("torch_dtype");
    j["head_dim"] = nullptr;
    auto c = parse(j);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->num_kv_heads, testing::kTinyHeads);
    EXPECT_EQ(c->head_dim, testing::kTinyHidden / testing::kTinyHeads);
    EXPECT_FLOAT_EQ(c->rope_theta, 10000.0f);
    EXPECT_FALSE(c->tie_word_embeddings);
    EXPECT_EQ(c->torch_dtype, DType::kBF16);
}

TEST(HfConfigTest, Qwen2AlwaysHasBiasQwen3HasQkNorm) {
    nlohmann::json q2 = testing::tiny_hf_config("Qwen2ForCausalLM");
    auto c2 = parse(q2);
    ASSERT_TRUE(c2.ok()) << c2.status().to_string();
    EXPECT_EQ(c2->family, ArchFamily::kQwen2);
    EXPECT_TRUE(c2->attention_bias);
    nlohmann::json q3 = testing::tiny_hf_config("Qwen3ForCausalLM");
    q3["head_dim"] = 32;  // Qwen3 decouples head_dim from hidden / heads
    q3["attention_bias"] = false;
    q3["dtype"] = "bfloat16";  // transformers >= 5 spelling
    q3.erase("torch_dtype");
    auto c3 = parse(q3);
    ASSERT_TRUE(c3.ok()) << c3.status().to_string();
    EXPECT_EQ(c3->family, ArchFamily::kQwen3);
    EXPECT_TRUE(c3->qk_norm);
    EXPECT_FALSE(c3->attention_bias);
    EXPECT_EQ(c3->head_dim, 32);
    EXPECT_EQ(c3->torch_dtype, DType::kBF16);
}

TEST(HfConfigTest, Llama3RopeScalingAndEosList) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j["rope_theta"] = 500000.0;
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
    j["eos_token_id"] = {2, 3, 4};
    auto c = parse(j);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_FLOAT_EQ(c->rope_theta, 500000.0f);
    EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLlama3);
    EXPECT_FLOAT_EQ(c->rope_scaling.factor, 8.0f);
    EXPECT_FLOAT_EQ(c->rope_scaling.low_freq_factor, 1.0f);
    EXPECT_FLOAT_EQ(c->rope_scaling.high_freq_factor, 4.0f);
    EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
    EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2, 3, 4}));
}

TEST(HfConfigTest, RopeParametersOfTransformers5) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j.erase("rope_theta");
    j["rope_scaling"] = nullptr;
    j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e6}};
    auto c = parse(j);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_FLOAT_EQ(c->rope_theta, 1e6f);
    EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
    EXPECT_FLOAT_EQ(c->rope_scaling.factor, 2.0f);

    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5e5}};
    auto d = parse(j);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_FLOAT_EQ(d->rope_theta, 5e5f);
    EXPECT_EQ(d->rope_scaling.type, RopeScalingType::kNone);
}

TEST(HfConfigTest, LegacyRopeScalingTypeKey) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
    auto c = parse(j);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
}

TEST(HfConfigTest, UnsupportedRopeTypeNamesIt) {
    nlohmann::json j = testing::tiny_hf_config("Qwen2ForCausalLM");
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    expect_error(j, StatusCode::kUnsupported, {"rope_scaling.rope_type 'yarn'"});
}

TEST(HfConfigTest, UnsupportedArchitectureNamesIt) {
    nlohmann::json j = testing::tiny_hf_config("MistralForCausalLM");
    expect_error(j, StatusCode::kUnsupported, {"'MistralForCausalLM'"});
    j.erase("architectures");
    expect_error(j, StatusCode::kNotFound, {"architectures"});
    j["architectures"] = "LlamaForCausalLM";
    expect_error(j, StatusCode::kInvalidArgument, {"architectures"});
}

TEST(HfConfigTest, WrongFieldTypesNameTheField) {
    const auto with = [](const char* key, nlohmann::json value) {
        nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
        j[key] = std::move(value);
        return j;
    };
    expect_error(with("hidden_size", "64"), StatusCode::kInvalidArgument,
                 {"/models/x/config.json", "'hidden_size'", "integer", "string"});
    expect_error(with("num_attention_heads", 4.5), StatusCode::kInvalidArgument,
                 {"'num_attention_heads'"});
    expect_error(with("vocab_size", 1ll << 40), StatusCode::kInvalidArgument, {"'vocab_size'"});
    expect_error(with("rms_norm_eps", "small"), StatusCode::kInvalidArgument, {"'rms_norm_eps'"});
    expect_error(with("tie_word_embeddings", 1), StatusCode::kInvalidArgument,
                 {"'tie_word_embeddings'"});
    expect_error(with("eos_token_id", {1, "x"}), StatusCode::kInvalidArgument, {"'eos_token_id'"});
    expect_error(with("rope_scaling", "llama3"), StatusCode::kInvalidArgument, {"'rope_scaling'"});
    expect_error(with("torch_dtype", "int8"), StatusCode::kUnsupported, {"int8"});
    nlohmann::json j = with("rope_scaling", {{"rope_type", "llama3"}, {"factor", "eight"}});
    expect_error(j, StatusCode::kInvalidArgument, {"'rope_scaling.factor'"});
}

TEST(HfConfigTest, MissingRequiredField) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j.erase("intermediate_size");
    expect_error(j, StatusCode::kNotFound, {"'intermediate_size'"});
}

TEST(HfConfigTest, IntegralFloatsAccepted) {
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j["hidden_size"] = 64.0;
    auto c = parse(j);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->hidden_size, 64);
}

TEST(HfConfigTest, UnsupportedFeatures) {
    nlohmann::json j = testing::tiny_hf_config("Qwen2ForCausalLM");
    j["use_sliding_window"] = true;
    expect_error(j, StatusCode::kUnsupported, {"use_sliding_window"});
    j = testing::tiny_hf_config("LlamaForCausalLM");
    j["hidden_act"] = "gelu";
    expect_error(j, StatusCode::kUnsupported, {"hidden_act", "gelu"});
    j = testing::tiny_hf_config("LlamaForCausalLM");
    j["mlp_bias"] = true;
    expect_error(j, StatusCode::kUnsupported, {"mlp_bias"});
}

TEST(HfConfigTest, InvalidJsonAndInconsistentConfig) {
    auto bad = parse_hf_config("{\"hidden_size\": ", "/m/config.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(contains(bad.status().message(), "/m/config.json"));
    nlohmann::json j = testing::tiny_hf_config("LlamaForCausalLM");
    j["num_key_value_heads"] = 3;  // 4 heads are not a multiple of 3
    expect_error(j, StatusCode::kInvalidArgument, {"num_key_value_heads"});
}

// As transformers 5.24 writes them (LlamaConfig(...).to_json_string()).
TEST(HfConfigTest, Transformers5Files) {
    auto llama = parse_hf_config(R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 1, "eos_token_id": 2, "head_dim": 16, "hidden_act": "silu",
  "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 128,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
  "pad_token_id": null, "pretraining_tp": 1, "rms_norm_eps": 1e-06,
  "rope_parameters": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_theta": 500000.0,
                      "rope_type": "llama3"},
  "tie_word_embeddings": false, "transformers_version": "5.24.0", "use_cache": true,
  "vocab_size": 32})",
                                 "config.json");
    ASSERT_TRUE(llama.ok()) << llama.status().to_string();
    EXPECT_FLOAT_EQ(llama->rope_theta, 500000.0f);
    EXPECT_EQ(llama->rope_scaling.type, RopeScalingType::kLlama3);
    EXPECT_EQ(llama->rope_scaling.original_max_position_embeddings, 8192);

    auto qwen3 = parse_hf_config(R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": null, "eos_token_id": null, "head_dim": 32, "hidden_act": "silu",
  "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 128,
  "layer_types": ["full_attention", "full_attention"], "max_position_embeddings": 32768,
  "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 4,
  "num_hidden_layers": 2, "num_key_value_heads": 2, "pad_token_id": null, "rms_norm_eps": 1e-06,
  "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "sliding_window": null,
  "tie_word_embeddings": false, "transformers_version": "5.24.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 32})",
                                 "config.json");
    ASSERT_TRUE(qwen3.ok()) << qwen3.status().to_string();
    EXPECT_FLOAT_EQ(qwen3->rope_theta, 1e6f);
    EXPECT_EQ(qwen3->rope_scaling.type, RopeScalingType::kNone);
    EXPECT_FALSE(qwen3->bos_token_id.has_value());
    EXPECT_TRUE(qwen3->eos_token_ids.empty());
    EXPECT_EQ(qwen3->head_dim, 32);
}

TEST(HfConfigTest, SlidingLayersAreUnsupported) {
    nlohmann::json j = testing::tiny_hf_config("Qwen3ForCausalLM");
    j["layer_types"] = {"full_attention", "sliding_attention"};
    expect_error(j, StatusCode::kUnsupported, {"layer_types", "sliding_attention"});
}

}  // namespace
}  // namespace se
