#include "support/tiny_models.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "model/hf_config.h"
#include "model/required_weights.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

void add_tokenizer(GgufWriter& w) {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int i = 0; i < kTinyVocab; ++i) {
        tokens.push_back(fmt::format("t{}", i));
        types.push_back(i < 3 ? 3 : 1);
    }
    w.add_string("tokenizer.ggml.model", "gpt2")
        .add_string("tokenizer.ggml.pre", "smollm")
        .add_string_array("tokenizer.ggml.tokens", tokens)
        .add_i32_array("tokenizer.ggml.token_type", types)
        .add_string_array("tokenizer.ggml.merges", {"t 1", "t 2"})
        .add_u32("tokenizer.ggml.bos_token_id", 1)
        .add_u32("tokenizer.ggml.eos_token_id", 2)
        .add_u32("tokenizer.ggml.padding_token_id", 2)
        .add_bool("tokenizer.ggml.add_bos_token", false)
        .add_string("tokenizer.chat_template", "{{ messages }}");
}

void add_layer(GgufWriter& w, const TinyGgufOptions& o, int layer) {
    const std::string p = fmt::format("blk.{}.", layer);
    const int64_t q = kTinyHeads * kTinyHeadDim;
    const int64_t kv = kTinyKvHeads * kTinyHeadDim;
    w.add_tensor(p + "attn_norm.weight", kGgmlF32, {kTinyHidden})
        .add_tensor(p + "attn_q.weight", kGgmlQ4_1, {kTinyHidden, q})
        .add_tensor(p + "attn_k.weight", kGgmlQ4_0, {kTinyHidden, kv})
        .add_tensor(p + "attn_v.weight", kGgmlF16, {kTinyHidden, kv})
        .add_tensor(p + "attn_output.weight", kGgmlBF16, {q, kTinyHidden})
        .add_tensor(p + "ffn_norm.weight", kGgmlF32, {kTinyHidden})
        .add_tensor(p + "ffn_gate.weight", kGgmlF32, {kTinyHidden, kTinyInter})
        .add_tensor(p + "ffn_up.weight", kGgmlQ4_1, {kTinyHidden, kTinyInter})
        .add_tensor(p + "ffn_down.weight", kGgmlQ8_0, {kTinyInter, kTinyHidden});
    if (o.arch == "qwen2") {
        w.add_tensor(p + "attn_q.bias", kGgmlF32, {q})
            .add_tensor(p + "attn_k.bias", kGgmlF32, {kv})
            .add_tensor(p + "attn_v.bias", kGgmlF32, {kv});
    }
    if (o.arch == "qwen3") {
        w.add_tensor(p + "attn_q_norm.weight", kGgmlF32, {kTinyHeadDim})
            .add_tensor(p + "attn_k_norm.weight", kGgmlF32, {kTinyHeadDim});
    }
}

}  // namespace

GgufWriter tiny_gguf(const TinyGgufOptions& o) {
    GgufWriter w;
    const std::string& a = o.arch;
    w.add_string("general.architecture", a)
        .add_string("general.name", "tiny")
        .add_u32(a + ".block_count", kTinyLayers)
        .add_u32(a + ".context_length", 256)
        .add_u32(a + ".embedding_length", kTinyHidden)
        .add_u32(a + ".feed_forward_length", kTinyInter)
        .add_u32(a + ".attention.head_count", kTinyHeads)
        .add_u32(a + ".attention.head_count_kv", kTinyKvHeads)
        .add_f32(a + ".rope.freq_base", 500000.0f)
        .add_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f)
        .add_u32(a + ".vocab_size", kTinyVocab);
    if (o.with_tokenizer) add_tokenizer(w);
    w.add_tensor("token_embd.weight", kGgmlQ8_0, {kTinyHidden, kTinyVocab});
    for (int layer = 0; layer < kTinyLayers; ++layer) add_layer(w, o, layer);
    w.add_tensor("output_norm.weight", kGgmlF32, {kTinyHidden});
    if (!o.tied) w.add_tensor("output.weight", kGgmlF16, {kTinyHidden, kTinyVocab});
    return w;
}

nlohmann::json tiny_hf_config(const std::string& architecture) {
    return {{"architectures", {architecture}},
            {"hidden_size", kTinyHidden},
            {"intermediate_size", kTinyInter},
            {"num_hidden_layers", kTinyLayers},
            {"num_attention_heads", kTinyHeads},
            {"num_key_value_heads", kTinyKvHeads},
            {"vocab_size", kTinyVocab},
            {"max_position_embeddings", 256},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 10000.0},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", false},
            {"torch_dtype", "float32"},
            {"bos_token_id", 1},
            {"eos_token_id", 2}};
}

std::vector<StTensor> tiny_hf_tensors(const nlohmann::json& config) {
    auto parsed = parse_hf_config(config.dump(), "config.json");
    EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
    std::vector<StTensor> tensors;
    if (!parsed.ok()) return tensors;
    for (const WeightSpec& spec : required_weights(*parsed)) {
        std::vector<float> values(static_cast<size_t>(spec.rows * spec.cols));
        const float base = spec.role == WeightRole::kNorm ? 1.0f : 0.0f;
        for (size_t i = 0; i < values.size(); ++i)
            values[i] = base + static_cast<float>(static_cast<int>(i % 17) - 8) * 0.001f;
        std::vector<int64_t> shape = {spec.rows, spec.cols};
        if (spec.role == WeightRole::kNorm || spec.role == WeightRole::kBias) shape = {spec.cols};
        tensors.push_back(f32_tensor(spec.name, shape, values));
    }
    return tensors;
}

void write_tiny_hf(const std::filesystem::path& dir, const nlohmann::json& config) {
    write_file(dir / "config.json", config.dump(2));
    write_file(dir / "model.safetensors", build_safetensors(tiny_hf_tensors(config)));
}

}  // namespace se::testing
