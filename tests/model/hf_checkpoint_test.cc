#include "model/hf_checkpoint.h"

#include <gtest/gtest.h>

#include "model/required_weights.h"
#include "support/test_files.h"
#include "support/tiny_models.h"

namespace se {
namespace {

using testing::StTensor;
using testing::TempDir;

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

// Splits the tiny model's tensors over two shards and writes the index.
void write_sharded(const TempDir& dir, const nlohmann::json& config) {
    testing::write_file(dir.path() / "config.json", config.dump());
    const std::vector<StTensor> tensors = testing::tiny_hf_tensors(config);
    std::vector<StTensor> first(tensors.begin(), tensors.begin() + tensors.size() / 2);
    std::vector<StTensor> second(tensors.begin() + tensors.size() / 2, tensors.end());
    nlohmann::json weight_map = nlohmann::json::object();
    for (const StTensor& t : first) weight_map[t.name] = "model-00001-of-00002.safetensors";
    for (const StTensor& t : second) weight_map[t.name] = "model-00002-of-00002.safetensors";
    testing::write_file(dir.path() / "model-00001-of-00002.safetensors",
                        testing::build_safetensors(first));
    testing::write_file(dir.path() / "model-00002-of-00002.safetensors",
                        testing::build_safetensors(second));
    testing::write_file(
        dir.path() / "model.safetensors.index.json",
        nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump());
}

TEST(HfCheckpointTest, SingleFileWithTokenizerFiles) {
    TempDir dir;
    const nlohmann::json config = testing::tiny_hf_config("LlamaForCausalLM");
    testing::write_tiny_hf(dir.path(), config);
    testing::write_file(dir.path() / "tokenizer.json", R"({"model": {"type": "BPE"}})");
    testing::write_file(dir.path() / "tokenizer_config.json",
                        R"({"chat_template": "{{ x }}", "bos_token": "<s>",
                            "eos_token": {"content": "</s>", "lstrip": false},
                            "add_bos_token": true})");
    testing::write_file(dir.path() / "generation_config.json",
                        R"({"eos_token_id": [2, 7], "temperature": 0.6, "top_p": 0.9})");
    auto ckpt = read_hf_checkpoint(dir.path().string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
    EXPECT_EQ(ckpt->config.num_layers, testing::kTinyLayers);
    EXPECT_EQ(ckpt->tokenizer_json, R"({"model": {"type": "BPE"}})");
    EXPECT_EQ(ckpt->tokenizer_config.bos_token, "<s>");
    EXPECT_EQ(ckpt->tokenizer_config.eos_token, "</s>");
    EXPECT_EQ(ckpt->tokenizer_config.add_bos_token, true);
    EXPECT_EQ(ckpt->chat_template, "{{ x }}");
    EXPECT_EQ(ckpt->generation.eos_token_ids, (std::vector<int32_t>{2, 7}));
    EXPECT_FLOAT_EQ(*ckpt->generation.temperature, 0.6f);
    EXPECT_FLOAT_EQ(*ckpt->generation.top_p, 0.9f);
    EXPECT_FALSE(ckpt->generation.top_k.has_value());
    EXPECT_EQ(ckpt->config.eos_token_ids, (std::vector<int32_t>{2, 7}));  // union

    auto weights = load_hf_weights(dir.path().string());
    ASSERT_TRUE(weights.ok()) << weights.status().to_string();
    EXPECT_TRUE(check_weights(ckpt->config, *weights).ok());
    auto q = weights->get("model.layers.1.self_attn.q_proj.weight",
                          testing::kTinyHeads * testing::kTinyHeadDim, testing::kTinyHidden);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_FLOAT_EQ(q->f32()[1], -0.007f);
}

TEST(HfCheckpointTest, OptionalFilesMayBeAbsent) {
    TempDir dir;
    testing::write_tiny_hf(dir.path(), testing::tiny_hf_config("Qwen3ForCausalLM"));
    auto ckpt = read_hf_checkpoint(dir.path().string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
    EXPECT_TRUE(ckpt->tokenizer_json.empty());
    EXPECT_TRUE(ckpt->tokenizer_config.json.is_null());
    EXPECT_TRUE(ckpt->chat_template.empty());
    EXPECT_TRUE(ckpt->generation.eos_token_ids.empty());
}

TEST(HfCheckpointTest, ChatTemplateJinjaWins) {
    TempDir dir;
    testing::write_tiny_hf(dir.path(), testing::tiny_hf_config("LlamaForCausalLM"));
    testing::write_file(dir.path() / "tokenizer_config.json", R"({"chat_template": "old"})");
    testing::write_file(dir.path() / "chat_template.jinja", "new {{ messages }}");
    auto ckpt = read_hf_checkpoint(dir.path().string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
    EXPECT_EQ(ckpt->chat_template, "new {{ messages }}");
}

TEST(HfCheckpointTest, MissingConfigNamesIt) {
    TempDir dir;
    auto ckpt = read_hf_checkpoint(dir.path().string());
    ASSERT_FALSE(ckpt.ok());
    EXPECT_EQ(ckpt.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(ckpt.status().message(), "config.json"));
}

TEST(HfCheckpointTest, BadGenerationConfigNamesFileAndField) {
    TempDir dir;
    testing::write_tiny_hf(dir.path(), testing::tiny_hf_config("LlamaForCausalLM"));
    testing::write_file(dir.path() / "generation_config.json", R"({"top_k": "fifty"})");
    auto ckpt = read_hf_checkpoint(dir.path().string());
    ASSERT_FALSE(ckpt.ok());
    EXPECT_TRUE(contains(ckpt.status().message(), "generation_config.json"));
    EXPECT_TRUE(contains(ckpt.status().message(), "'top_k'"));
}

TEST(HfCheckpointTest, Sharded) {
    TempDir dir;
    const nlohmann::json config = testing::tiny_hf_config("Qwen2ForCausalLM");
    write_sharded(dir, config);
    auto ckpt = read_hf_checkpoint(dir.path().string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
    auto weights = load_hf_weights(dir.path().string());
    ASSERT_TRUE(weights.ok()) << weights.status().to_string();
    EXPECT_EQ(weights->tensors().size(), testing::tiny_hf_tensors(config).size());
    EXPECT_TRUE(check_weights(ckpt->config, *weights).ok())
        << check_weights(ckpt->config, *weights).message();
}

TEST(HfCheckpointTest, MissingShardNamesIt) {
    TempDir dir;
    write_sharded(dir, testing::tiny_hf_config("LlamaForCausalLM"));
    std::filesystem::remove(dir.path() / "model-00002-of-00002.safetensors");
    auto weights = load_hf_weights(dir.path().string());
    ASSERT_FALSE(weights.ok());
    EXPECT_EQ(weights.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(weights.status().message(), "model-00002-of-00002.safetensors"));
}

TEST(HfCheckpointTest, TensorInTwoShards) {
    TempDir dir;
    const nlohmann::json config = testing::tiny_hf_config("LlamaForCausalLM");
    write_sharded(dir, config);
    // Shard 2 also holds shard 1's first tensor.
    std::vector<StTensor> tensors = testing::tiny_hf_tensors(config);
    std::vector<StTensor> second(tensors.begin() + tensors.size() / 2, tensors.end());
    second.push_back(tensors.front());
    testing::write_file(dir.path() / "model-00002-of-00002.safetensors",
                        testing::build_safetensors(second));
    auto weights = load_hf_weights(dir.path().string());
    ASSERT_FALSE(weights.ok());
    EXPECT_EQ(weights.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(contains(weights.status().message(), tensors.front().name));
    EXPECT_TRUE(contains(weights.status().message(), "two shards"));
}

TEST(HfCheckpointTest, IndexPointsAtWrongShard) {
    TempDir dir;
    write_sharded(dir, testing::tiny_hf_config("LlamaForCausalLM"));
    testing::write_file(dir.path() / "model.safetensors.index.json",
                        R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors",
                                           "x": "model-00002-of-00002.safetensors"}})");
    auto weights = load_hf_weights(dir.path().string());
    ASSERT_FALSE(weights.ok());
    EXPECT_TRUE(contains(weights.status().message(), "model.norm.weight"));
}

TEST(HfCheckpointTest, IndexMayNotEscapeTheDirectory) {
    TempDir dir;
    write_sharded(dir, testing::tiny_hf_config("LlamaForCausalLM"));
    testing::write_file(dir.path() / "model.safetensors.index.json",
                        R"({"weight_map": {"a": "../../etc/passwd"}})");
    auto weights = load_hf_weights(dir.path().string());
    ASSERT_FALSE(weights.ok());
    EXPECT_TRUE(contains(weights.status().message(), "../../etc/passwd"));
}

TEST(HfCheckpointTest, NoWeights) {
    TempDir dir;
    testing::write_file(dir.path() / "config.json",
                        testing::tiny_hf_config("LlamaForCausalLM").dump());
    auto weights = load_hf_weights(dir.path().string());
    ASSERT_FALSE(weights.ok());
    EXPECT_EQ(weights.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(weights.status().message(), "model.safetensors"));
}

}  // namespace
}  // namespace se
