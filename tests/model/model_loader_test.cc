#include "model/model_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "support/test_files.h"
#include "support/tiny_models.h"

namespace se {
namespace {

using testing::TempDir;

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

TEST(ModelLoaderTest, AutoPicksGgufForAGgufFile) {
    TempDir dir;
    testing::tiny_gguf({}).write(dir.file("tiny.gguf"));
    std::vector<float> progress;
    auto model = load_model(
        {.model = dir.file("tiny.gguf"), .on_progress = [&](float f) { progress.push_back(f); }});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ(model->load_format, "gguf");
    EXPECT_EQ(model->source_path, dir.file("tiny.gguf"));
    EXPECT_EQ(model->config.family, ArchFamily::kLlama);
    ASSERT_TRUE(model->gguf_vocab.has_value());
    EXPECT_EQ(model->chat_template, "{{ messages }}");
    EXPECT_TRUE(model->tokenizer_json.empty());
    EXPECT_TRUE(model->tokenizer_config.is_null());
    // File types kept (auto), quantized untouched.
    EXPECT_EQ(model->weights.get("model.layers.0.self_attn.q_proj.weight")->dtype, DType::kQ4_1);
    EXPECT_EQ(model->weights.get("model.layers.0.self_attn.v_proj.weight")->dtype, DType::kF16);
    ASSERT_GE(progress.size(), 2u);
    EXPECT_EQ(progress.front(), 0.0f);
    EXPECT_EQ(progress.back(), 1.0f);
    EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
}

TEST(ModelLoaderTest, DtypeConvertsFloatWeightsOnly) {
    TempDir dir;
    testing::tiny_gguf({}).write(dir.file("tiny.gguf"));
    auto model = load_model({.model = dir.file("tiny.gguf"), .dtype = "bf16"});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const WeightStore& w = model->weights;
    EXPECT_EQ(w.get("model.layers.0.self_attn.q_proj.weight")->dtype, DType::kQ4_1);
    EXPECT_EQ(w.get("model.embed_tokens.weight")->dtype, DType::kQ8_0);
    EXPECT_EQ(w.get("model.layers.0.self_attn.v_proj.weight")->dtype, DType::kBF16);  // was F16
    EXPECT_EQ(w.get("model.layers.0.mlp.gate_proj.weight")->dtype, DType::kBF16);     // was F32
    EXPECT_EQ(w.get("lm_head.weight")->dtype, DType::kBF16);
    EXPECT_EQ(w.get("model.norm.weight")->dtype, DType::kF32);  // norms stay F32
}

TEST(ModelLoaderTest, SafetensorsF32ToBf16Values) {
    TempDir dir;
    testing::write_tiny_hf(dir.path(), testing::tiny_hf_config("LlamaForCausalLM"));
    testing::write_file(dir.path() / "tokenizer.json", "{}");
    auto f32 = load_model({.model = dir.path().string()});
    ASSERT_TRUE(f32.ok()) << f32.status().to_string();
    EXPECT_EQ(f32->load_format, "safetensors");
    EXPECT_EQ(f32->tokenizer_json, "{}");
    auto bf16 = load_model({.model = dir.path().string(), .dtype = "bfloat16"});
    ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
    const std::string name = "model.layers.1.mlp.down_proj.weight";
    const ConstTensorView src = *f32->weights.get(name);
    const ConstTensorView dst = *bf16->weights.get(name);
    ASSERT_EQ(src.dtype, DType::kF32);
    ASSERT_EQ(dst.dtype, DType::kBF16);
    ASSERT_EQ(dst.rows, src.rows);
    ASSERT_EQ(dst.cols, src.cols);
    const auto* bits = static_cast<const uint16_t*>(dst.data);
    for (int64_t i = 0; i < src.num_elems(); ++i)
        ASSERT_EQ(bits[i], f32_to_bf16(src.f32()[i])) << i;
    EXPECT_EQ(bf16->weights.get("model.norm.weight")->dtype, DType::kF32);
}

TEST(ModelLoaderTest, HfNormsBecomeF32) {
    TempDir dir;
    nlohmann::json config = testing::tiny_hf_config("Qwen2ForCausalLM");
    std::vector<testing::StTensor> tensors = testing::tiny_hf_tensors(config);
    for (testing::StTensor& t : tensors) {  // store everything as BF16, as HF checkpoints do
        std::vector<uint8_t> bf(t.data.size() / 2);
        for (size_t i = 0; i < bf.size() / 2; ++i) {
            float v;
            std::memcpy(&v, t.data.data() + 4 * i, 4);
            const uint16_t b = f32_to_bf16(v);
            std::memcpy(bf.data() + 2 * i, &b, 2);
        }
        t = {t.name, "BF16", t.shape, std::move(bf)};
    }
    testing::write_file(dir.path() / "config.json", config.dump());
    testing::write_file(dir.path() / "model.safetensors", testing::build_safetensors(tensors));
    auto model = load_model({.model = dir.path().string()});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const ConstTensorView norm = *model->weights.get("model.layers.0.input_layernorm.weight");
    EXPECT_EQ(norm.dtype, DType::kF32);
    EXPECT_FLOAT_EQ(norm.f32()[8], 1.0f);  // 1 + (8 - 8) * 0.001
    EXPECT_EQ(model->weights.get("model.layers.0.self_attn.q_proj.bias")->dtype, DType::kF32);
    EXPECT_EQ(model->weights.get("model.layers.0.self_attn.q_proj.weight")->dtype, DType::kBF16);
}

TEST(ModelLoaderTest, DummyFromConfigDirectory) {
    TempDir dir;
    testing::write_file(dir.path() / "config.json",
                        testing::tiny_hf_config("Qwen3ForCausalLM").dump());
    auto a = load_model({.model = dir.path().string(), .load_format = "dummy", .seed = 3});
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ(a->load_format, "dummy");
    EXPECT_EQ(a->weights.get("model.layers.0.self_attn.q_proj.weight")->dtype, DType::kBF16);
    EXPECT_TRUE(a->weights.contains("model.layers.1.self_attn.k_norm.weight"));
    auto f32 = load_model(
        {.model = dir.path().string(), .load_format = "dummy", .dtype = "float32", .seed = 3});
    ASSERT_TRUE(f32.ok()) << f32.status().to_string();
    EXPECT_EQ(f32->weights.get("lm_head.weight")->dtype, DType::kF32);
}

TEST(ModelLoaderTest, DummyFromGgufKeepsVocab) {
    TempDir dir;
    testing::tiny_gguf({}).write(dir.file("tiny.gguf"));
    auto model = load_model({.model = dir.file("tiny.gguf"), .load_format = "dummy"});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_TRUE(model->gguf_vocab.has_value());
    EXPECT_EQ(model->weights.get("model.embed_tokens.weight")->dtype, DType::kBF16);
}

TEST(ModelLoaderTest, Errors) {
    TempDir dir;
    auto missing = load_model({.model = dir.file("nope.gguf")});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(missing.status().message(), "nope.gguf"));

    testing::tiny_gguf({}).write(dir.file("tiny.gguf"));
    auto bad_dtype = load_model({.model = dir.file("tiny.gguf"), .dtype = "int4"});
    ASSERT_FALSE(bad_dtype.ok());
    EXPECT_TRUE(contains(bad_dtype.status().message(), "int4"));
    auto bad_format = load_model({.model = dir.file("tiny.gguf"), .load_format = "onnx"});
    ASSERT_FALSE(bad_format.ok());
    EXPECT_TRUE(contains(bad_format.status().message(), "onnx"));

    auto no_config = load_model({.model = dir.path().string()});
    ASSERT_FALSE(no_config.ok());
    EXPECT_TRUE(contains(no_config.status().message(), "config.json"));

    testing::write_file(dir.path() / "weights.bin", "x");
    auto unknown = load_model({.model = dir.file("weights.bin")});
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
}

TEST(ModelLoaderTest, MissingTensorIsNamed) {
    TempDir dir;
    const nlohmann::json config = testing::tiny_hf_config("LlamaForCausalLM");
    std::vector<testing::StTensor> tensors = testing::tiny_hf_tensors(config);
    std::erase_if(tensors, [](const testing::StTensor& t) {
        return t.name == "model.layers.1.mlp.up_proj.weight";
    });
    testing::write_file(dir.path() / "config.json", config.dump());
    testing::write_file(dir.path() / "model.safetensors", testing::build_safetensors(tensors));
    auto model = load_model({.model = dir.path().string()});
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(model.status().message(), "model.layers.1.mlp.up_proj.weight"));
}

TEST(ModelLoaderTest, GgufWithMissingTensorIsNamed) {
    TempDir dir;
    testing::GgufWriter w = testing::tiny_gguf({.arch = "qwen3"});
    w.remove_tensor("blk.1.attn_k_norm.weight");
    w.write(dir.file("q3.gguf"));
    auto model = load_model({.model = dir.file("q3.gguf")});
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(model.status().message(), "model.layers.1.self_attn.k_norm.weight"))
        << model.status().message();
    EXPECT_TRUE(contains(model.status().message(), "q3.gguf"));
}

// Checkpoints written by transformers 5.24 (tests/fixtures/models, tools/gen_model_fixtures.py).
std::string fixture(const char* name) {
    return std::string(SE_SOURCE_DIR) + "/tests/fixtures/models/" + name;
}

TEST(ModelLoaderTest, LoadsTransformersCheckpoints) {
    auto llama = load_model({.model = fixture("tiny-llama")});
    ASSERT_TRUE(llama.ok()) << llama.status().to_string();
    EXPECT_EQ(llama->config.num_layers, 3);
    EXPECT_EQ(llama->config.intermediate_size, 160);
    EXPECT_EQ(llama->config.vocab_size, 320);
    EXPECT_EQ(llama->config.rope_scaling.type, RopeScalingType::kLlama3);
    EXPECT_EQ(llama->config.rope_scaling.original_max_position_embeddings, 64);
    EXPECT_EQ(llama->config.torch_dtype, DType::kF32);
    EXPECT_EQ(llama->weights.get("lm_head.weight")->dtype, DType::kF32);

    auto tied = load_model({.model = fixture("tiny-llama-tied"), .dtype = "bfloat16"});
    ASSERT_TRUE(tied.ok()) << tied.status().to_string();
    EXPECT_TRUE(tied->config.tie_word_embeddings);
    EXPECT_EQ(tied->config.num_kv_heads, 1);
    EXPECT_EQ(tied->weights.get("model.embed_tokens.weight")->dtype, DType::kBF16);

    auto qwen2 = load_model({.model = fixture("tiny-qwen2")});
    ASSERT_TRUE(qwen2.ok()) << qwen2.status().to_string();
    EXPECT_TRUE(qwen2->config.attention_bias);
    EXPECT_TRUE(qwen2->config.tie_word_embeddings);
    EXPECT_EQ(qwen2->config.head_dim, 16);  // null in the file: hidden / heads
    EXPECT_FLOAT_EQ(qwen2->config.rope_theta, 1e6f);
    EXPECT_TRUE(qwen2->weights.contains("model.layers.1.self_attn.v_proj.bias"));

    auto qwen3 = load_model({.model = fixture("tiny-qwen3")});
    ASSERT_TRUE(qwen3.ok()) << qwen3.status().to_string();
    EXPECT_TRUE(qwen3->config.qk_norm);
    EXPECT_EQ(qwen3->config.head_dim, 32);
    EXPECT_EQ(qwen3->weights.get("model.layers.0.self_attn.q_proj.weight")->rows, 4 * 32);
}

}  // namespace
}  // namespace se
