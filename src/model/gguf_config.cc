#include "model/gguf_config.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

#include "core/half.h"

namespace se {
namespace {

// An integer key that must fit a positive int32 (layer counts, sizes).
Expected<int32_t> get_dim(const GgufFile& file, const std::string& key,
                          std::optional<int64_t> fallback) {
    SE_ASSIGN_OR_RETURN(const int64_t v,
                        fallback ? file.get_int_or(key, *fallback) : file.get_int(key));
    if (v <= 0 || v > std::numeric_limits<int32_t>::max()) {
        return invalid_argument(
            fmt::format("{}: metadata key '{}' must be a positive 32-bit integer, got {}",
                        file.path(), key, v));
    }
    return static_cast<int32_t>(v);
}

Expected<ArchFamily> arch_family(const GgufFile& file, const std::string& arch) {
    if (arch == "llama") return ArchFamily::kLlama;
    if (arch == "qwen2") return ArchFamily::kQwen2;
    if (arch == "qwen3") return ArchFamily::kQwen3;
    return unsupported(
        fmt::format("{}: architecture '{}' is not supported (supported: llama, "
                    "qwen2, qwen3)",
                    file.path(), arch));
}

// A float tensor of any stored float type, read as f32.
Expected<std::vector<float>> read_float_vector(const GgufFile& file, const GgufTensorInfo& info) {
    const ConstTensorView view = file.view(info);
    const int64_t n = view.num_elems();
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        switch (view.dtype) {
            case DType::kF32:
                out[i] = static_cast<const float*>(view.data)[i];
                break;
            case DType::kF16:
                out[i] = f16_to_f32(static_cast<const uint16_t*>(view.data)[i]);
                break;
            case DType::kBF16:
                out[i] = bf16_to_f32(static_cast<const uint16_t*>(view.data)[i]);
                break;
            case DType::kQ8_0:
            case DType::kQ4_0:
            case DType::kQ4_1:
            case DType::kI32:
                return unsupported(fmt::format("{}: tensor '{}' must be F32, F16 or BF16, not {}",
                                               file.path(), info.name, dtype_name(view.dtype)));
        }
    }
    return out;
}

Status read_rope(const GgufFile& file, const std::string& arch, ModelConfig& c) {
    SE_ASSIGN_OR_RETURN(const double theta, file.get_float_or(arch + ".rope.freq_base", 10000.0));
    c.rope_theta = static_cast<float>(theta);
    SE_ASSIGN_OR_RETURN(const int64_t rot_dims,
                        file.get_int_or(arch + ".rope.dimension_count", c.head_dim));
    if (rot_dims != c.head_dim) {
        return unsupported(
            fmt::format("{}: {}.rope.dimension_count is {} but head_dim is {}; "
                        "partial rotary embeddings are not supported",
                        file.path(), arch, rot_dims, c.head_dim));
    }
    SE_ASSIGN_OR_RETURN(const std::string scaling,
                        file.get_string_or(arch + ".rope.scaling.type", "none"));
    if (scaling == "linear") {
        SE_ASSIGN_OR_RETURN(const double factor, file.get_float(arch + ".rope.scaling.factor"));
        c.rope_scaling = {.type = RopeScalingType::kLinear, .factor = static_cast<float>(factor)};
    } else if (scaling != "none") {
        return unsupported(
            fmt::format("{}: {}.rope.scaling.type '{}' is not supported "
                        "(supported: none, linear)",
                        file.path(), arch, scaling));
    }
    if (const GgufTensorInfo* freqs = file.find_tensor("rope_freqs.weight")) {
        SE_ASSIGN_OR_RETURN(c.rope_freq_factors, read_float_vector(file, *freqs));
    }
    return {};
}

Status read_dims(const GgufFile& file, const std::string& arch, ModelConfig& c) {
    SE_ASSIGN_OR_RETURN(c.num_layers, get_dim(file, arch + ".block_count", std::nullopt));
    SE_ASSIGN_OR_RETURN(c.hidden_size, get_dim(file, arch + ".embedding_length", std::nullopt));
    SE_ASSIGN_OR_RETURN(c.intermediate_size,
                        get_dim(file, arch + ".feed_forward_length", std::nullopt));
    SE_ASSIGN_OR_RETURN(c.num_heads, get_dim(file, arch + ".attention.head_count", std::nullopt));
    SE_ASSIGN_OR_RETURN(c.num_kv_heads,
                        get_dim(file, arch + ".attention.head_count_kv", c.num_heads));
    SE_ASSIGN_OR_RETURN(c.head_dim,
                        get_dim(file, arch + ".attention.key_length", c.hidden_size / c.num_heads));
    SE_ASSIGN_OR_RETURN(const int32_t value_dim,
                        get_dim(file, arch + ".attention.value_length", c.head_dim));
    if (value_dim != c.head_dim) {
        return unsupported(
            fmt::format("{}: {}.attention.value_length ({}) differs from "
                        "key_length ({})",
                        file.path(), arch, value_dim, c.head_dim));
    }
    SE_ASSIGN_OR_RETURN(c.max_position_embeddings,
                        get_dim(file, arch + ".context_length", std::nullopt));
    SE_ASSIGN_OR_RETURN(const double eps,
                        file.get_float(arch + ".attention.layer_norm_rms_epsilon"));
    c.rms_norm_eps = static_cast<float>(eps);
    return {};
}

// {arch}.vocab_size, else the token list's length, else the embedding's rows.
Expected<int32_t> vocab_size(const GgufFile& file, const std::string& arch) {
    if (file.find(arch + ".vocab_size") != nullptr)
        return get_dim(file, arch + ".vocab_size", std::nullopt);
    int64_t count = 0;
    if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->is_array())
        count = static_cast<int64_t>(tokens->array_size());
    else if (const GgufTensorInfo* embd = file.find_tensor("token_embd.weight"))
        count = embd->rows();
    if (count > 0 && count <= std::numeric_limits<int32_t>::max())
        return static_cast<int32_t>(count);
    return not_found(
        fmt::format("{}: cannot tell the vocabulary size: no {}.vocab_size, "
                    "tokenizer.ggml.tokens or token_embd.weight",
                    file.path(), arch));
}

// An optional token id key; must lie inside a vocabulary of `num_tokens`.
Expected<std::optional<int32_t>> token_id(const GgufFile& file, const std::string& key,
                                          int64_t num_tokens) {
    if (file.find(key) == nullptr) return std::optional<int32_t>();
    SE_ASSIGN_OR_RETURN(const int64_t id, file.get_int(key));
    if (id < 0 || id >= num_tokens) {
        return invalid_argument(fmt::format("{}: {} is {}, outside the vocabulary of {} tokens",
                                            file.path(), key, id, num_tokens));
    }
    return std::optional<int32_t>(static_cast<int32_t>(id));
}

Status read_special_ids(const GgufFile& file, GgufVocab& v) {
    const auto n = static_cast<int64_t>(v.tokens.size());
    SE_ASSIGN_OR_RETURN(v.bos_id, token_id(file, "tokenizer.ggml.bos_token_id", n));
    SE_ASSIGN_OR_RETURN(v.eos_id, token_id(file, "tokenizer.ggml.eos_token_id", n));
    SE_ASSIGN_OR_RETURN(v.eot_id, token_id(file, "tokenizer.ggml.eot_token_id", n));
    SE_ASSIGN_OR_RETURN(v.unk_id, token_id(file, "tokenizer.ggml.unknown_token_id", n));
    SE_ASSIGN_OR_RETURN(v.pad_id, token_id(file, "tokenizer.ggml.padding_token_id", n));
    SE_ASSIGN_OR_RETURN(v.add_bos, file.get_bool_or("tokenizer.ggml.add_bos_token", false));
    SE_ASSIGN_OR_RETURN(v.add_eos, file.get_bool_or("tokenizer.ggml.add_eos_token", false));
    return {};
}

// Number of tokens ids must stay below: the token list when there is one, else the vocab size.
int64_t num_tokens(const GgufFile& file, const ModelConfig& c) {
    const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
    return tokens != nullptr && tokens->is_array() ? static_cast<int64_t>(tokens->array_size())
                                                   : c.vocab_size;
}

Status read_stop_ids(const GgufFile& file, ModelConfig& c) {
    const int64_t n = num_tokens(file, c);
    SE_ASSIGN_OR_RETURN(c.bos_token_id, token_id(file, "tokenizer.ggml.bos_token_id", n));
    SE_ASSIGN_OR_RETURN(const std::optional<int32_t> eos,
                        token_id(file, "tokenizer.ggml.eos_token_id", n));
    SE_ASSIGN_OR_RETURN(const std::optional<int32_t> eot,
                        token_id(file, "tokenizer.ggml.eot_token_id", n));
    // Generation ends at end-of-sequence and at end-of-turn (chat models), as llama.cpp does.
    if (eos) c.eos_token_ids.push_back(*eos);
    if (eot && eot != eos) c.eos_token_ids.push_back(*eot);
    return {};
}

Status read_token_types(const GgufFile& file, GgufVocab& v) {
    SE_ASSIGN_OR_RETURN(const std::vector<int64_t> types,
                        file.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != v.tokens.size()) {
        return invalid_argument(
            fmt::format("{}: tokenizer.ggml.token_type has {} entries for {} "
                        "tokens",
                        file.path(), types.size(), v.tokens.size()));
    }
    v.token_types.reserve(types.size());
    for (const int64_t t : types) {
        if (t < 0 || t > static_cast<int64_t>(GgufTokenType::kByte)) {
            return invalid_argument(
                fmt::format("{}: tokenizer.ggml.token_type holds {}, not a "
                            "token type (0 to 6)",
                            file.path(), t));
        }
        v.token_types.push_back(static_cast<int32_t>(t));
    }
    return {};
}

}  // namespace

Expected<ModelConfig> gguf_model_config(const GgufFile& file) {
    ModelConfig c;
    SE_ASSIGN_OR_RETURN(const std::string arch, file.get_string("general.architecture"));
    SE_ASSIGN_OR_RETURN(c.family, arch_family(file, arch));
    c.architecture = arch;
    SE_RETURN_IF_ERROR(read_dims(file, arch, c));
    SE_ASSIGN_OR_RETURN(c.vocab_size, vocab_size(file, arch));
    SE_RETURN_IF_ERROR(read_rope(file, arch, c));
    // llama.cpp's converter permutes the q/k rows of llama models so that RoPE rotates adjacent
    // pairs; qwen2/qwen3 are converted unpermuted and keep NeoX halves.
    c.rope_style = c.family == ArchFamily::kLlama ? RopeStyle::kInterleaved : RopeStyle::kNeox;
    // Qwen2 always has q/k/v biases; other llama-style files may carry them too.
    c.attention_bias =
        c.family == ArchFamily::kQwen2 || file.find_tensor("blk.0.attn_q.bias") != nullptr;
    c.qk_norm = c.family == ArchFamily::kQwen3;
    c.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
    SE_RETURN_IF_ERROR(read_stop_ids(file, c));
    return c;
}

Expected<std::optional<GgufVocab>> gguf_vocab(const GgufFile& file) {
    if (file.find("tokenizer.ggml.tokens") == nullptr) return std::optional<GgufVocab>();
    GgufVocab v;
    SE_ASSIGN_OR_RETURN(v.model, file.get_string("tokenizer.ggml.model"));
    SE_ASSIGN_OR_RETURN(v.pre, file.get_string_or("tokenizer.ggml.pre", ""));
    SE_ASSIGN_OR_RETURN(v.tokens, file.get_string_array("tokenizer.ggml.tokens"));
    if (file.find("tokenizer.ggml.token_type") != nullptr)
        SE_RETURN_IF_ERROR(read_token_types(file, v));
    if (file.find("tokenizer.ggml.merges") != nullptr) {
        SE_ASSIGN_OR_RETURN(v.merges, file.get_string_array("tokenizer.ggml.merges"));
    }
    SE_RETURN_IF_ERROR(read_special_ids(file, v));
    return std::optional<GgufVocab>(std::move(v));
}

}  // namespace se
