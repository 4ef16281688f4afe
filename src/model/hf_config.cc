#include "model/hf_config.h"

#include <fmt/core.h>

#include "model/json_fields.h"

namespace se {
namespace {

Expected<ArchFamily> arch_family(const JsonFields& fields, std::string& architecture) {
    const nlohmann::json* archs = fields.find("architectures");
    if (archs == nullptr)
        return not_found(fmt::format("{}: field 'architectures' is missing", fields.source()));
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
        return fields.type_error("architectures", "a non-empty list of strings");
    architecture = (*archs)[0].get<std::string>();
    if (architecture == "LlamaForCausalLM") return ArchFamily::kLlama;
    if (architecture == "Qwen2ForCausalLM") return ArchFamily::kQwen2;
    if (architecture == "Qwen3ForCausalLM") return ArchFamily::kQwen3;
    return unsupported(
        fmt::format("{}: architecture '{}' is not supported (supported: "
                    "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)",
                    fields.source(), architecture));
}

Expected<float> number_or(const JsonFields& fields, std::string_view key, float fallback) {
    SE_ASSIGN_OR_RETURN(const std::optional<double> v, fields.find_number(key));
    return v ? static_cast<float>(*v) : fallback;
}

Status read_llama3_scaling(const JsonFields& rope, RopeScaling& s) {
    SE_ASSIGN_OR_RETURN(s.factor, number_or(rope, "factor", s.factor));
    SE_ASSIGN_OR_RETURN(s.low_freq_factor, number_or(rope, "low_freq_factor", s.low_freq_factor));
    SE_ASSIGN_OR_RETURN(s.high_freq_factor,
                        number_or(rope, "high_freq_factor", s.high_freq_factor));
    SE_ASSIGN_OR_RETURN(s.original_max_position_embeddings,
                        rope.require_i32("original_max_position_embeddings"));
    return {};
}

// rope_scaling, or rope_parameters (transformers >= 5), which also carries rope_theta.
Status read_rope(const JsonFields& fields, ModelConfig& c) {
    SE_ASSIGN_OR_RETURN(c.rope_theta, number_or(fields, "rope_theta", c.rope_theta));
    SE_ASSIGN_OR_RETURN(const nlohmann::json* params, fields.find_object("rope_parameters"));
    if (params != nullptr) {
        const JsonFields p(*params, fields.source(), "rope_parameters.");
        SE_ASSIGN_OR_RETURN(c.rope_theta, number_or(p, "rope_theta", c.rope_theta));
    }
    SE_ASSIGN_OR_RETURN(const nlohmann::json* scaling, fields.find_object("rope_scaling"));
    const std::string name = scaling != nullptr ? "rope_scaling" : "rope_parameters";
    if (scaling == nullptr) scaling = params;
    if (scaling == nullptr) return {};
    const JsonFields rope(*scaling, fields.source(), name + ".");
    SE_ASSIGN_OR_RETURN(std::optional<std::string> type, rope.find_string("rope_type"));
    if (!type) {
        SE_ASSIGN_OR_RETURN(type, rope.find_string("type"));
    }
    const std::string kind = type.value_or("default");
    if (kind == "default") return {};
    if (kind == "linear") {
        c.rope_scaling.type = RopeScalingType::kLinear;
        SE_ASSIGN_OR_RETURN(c.rope_scaling.factor, number_or(rope, "factor", 1.0f));
        return {};
    }
    if (kind == "llama3") {
        c.rope_scaling.type = RopeScalingType::kLlama3;
        return read_llama3_scaling(rope, c.rope_scaling);
    }
    return unsupported(
        fmt::format("{}: {}.rope_type '{}' is not supported (supported: default, "
                    "linear, llama3)",
                    fields.source(), name, kind));
}

Status read_dims(const JsonFields& fields, ModelConfig& c) {
    SE_ASSIGN_OR_RETURN(c.vocab_size, fields.require_i32("vocab_size"));
    SE_ASSIGN_OR_RETURN(c.hidden_size, fields.require_i32("hidden_size"));
    SE_ASSIGN_OR_RETURN(c.intermediate_size, fields.require_i32("intermediate_size"));
    SE_ASSIGN_OR_RETURN(c.num_layers, fields.require_i32("num_hidden_layers"));
    SE_ASSIGN_OR_RETURN(c.num_heads, fields.require_i32("num_attention_heads"));
    SE_ASSIGN_OR_RETURN(const std::optional<int32_t> kv_heads,
                        fields.find_i32("num_key_value_heads"));
    c.num_kv_heads = kv_heads.value_or(c.num_heads);
    SE_ASSIGN_OR_RETURN(const std::optional<int32_t> head_dim, fields.find_i32("head_dim"));
    c.head_dim = head_dim ? *head_dim : (c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
    SE_ASSIGN_OR_RETURN(c.max_position_embeddings, fields.require_i32("max_position_embeddings"));
    SE_ASSIGN_OR_RETURN(c.rms_norm_eps, number_or(fields, "rms_norm_eps", c.rms_norm_eps));
    return {};
}

// Settings these architectures accept in config.json but this engine does not implement.
Status reject_unsupported(const JsonFields& fields) {
    SE_ASSIGN_OR_RETURN(const std::optional<std::string> act, fields.find_string("hidden_act"));
    if (act && *act != "silu") {
        return unsupported(fmt::format("{}: hidden_act '{}' is not supported (supported: silu)",
                                       fields.source(), *act));
    }
    SE_ASSIGN_OR_RETURN(const std::optional<bool> sliding, fields.find_bool("use_sliding_window"));
    if (sliding.value_or(false)) {
        return unsupported(
            fmt::format("{}: use_sliding_window is true; sliding-window attention "
                        "is not supported",
                        fields.source()));
    }
    const nlohmann::json* layer_types = fields.find("layer_types");
    if (layer_types != nullptr) {
        if (!layer_types->is_array()) return fields.type_error("layer_types", "a list of strings");
        for (const nlohmann::json& type : *layer_types) {
            if (type != "full_attention") {
                return unsupported(
                    fmt::format("{}: layer_types holds {}; only full_attention "
                                "layers are supported",
                                fields.source(), type.dump()));
            }
        }
    }
    SE_ASSIGN_OR_RETURN(const std::optional<bool> mlp_bias, fields.find_bool("mlp_bias"));
    if (mlp_bias.value_or(false)) {
        return unsupported(
            fmt::format("{}: mlp_bias is true; MLP biases are not supported", fields.source()));
    }
    return {};
}

Status read_flags(const JsonFields& fields, ModelConfig& c) {
    SE_ASSIGN_OR_RETURN(const std::optional<bool> tie, fields.find_bool("tie_word_embeddings"));
    c.tie_word_embeddings = tie.value_or(false);
    SE_ASSIGN_OR_RETURN(const std::optional<bool> bias, fields.find_bool("attention_bias"));
    // Qwen2 has q/k/v biases whatever the file says; its config class has no such field.
    c.attention_bias = c.family == ArchFamily::kQwen2 || bias.value_or(false);
    c.qk_norm = c.family == ArchFamily::kQwen3;
    SE_ASSIGN_OR_RETURN(std::optional<std::string> dtype, fields.find_string("torch_dtype"));
    if (!dtype) {
        SE_ASSIGN_OR_RETURN(dtype, fields.find_string("dtype"));
    }
    if (dtype) {
        const std::optional<DType> parsed = parse_dtype(*dtype);
        if (!parsed) {
            return unsupported(
                fmt::format("{}: torch_dtype '{}' is not supported (supported: "
                            "float32, bfloat16, float16)",
                            fields.source(), *dtype));
        }
        c.torch_dtype = *parsed;
    }
    SE_ASSIGN_OR_RETURN(c.bos_token_id, fields.find_i32("bos_token_id"));
    SE_ASSIGN_OR_RETURN(c.eos_token_ids, fields.find_i32_list("eos_token_id"));
    return {};
}

}  // namespace

Expected<ModelConfig> parse_hf_config(std::string_view json_text, const std::string& source) {
    SE_ASSIGN_OR_RETURN(const nlohmann::json json, parse_json(json_text, source));
    if (!json.is_object()) return data_loss(source + ": expected a JSON object");
    const JsonFields fields(json, source);
    ModelConfig c;
    SE_ASSIGN_OR_RETURN(c.family, arch_family(fields, c.architecture));
    SE_RETURN_IF_ERROR(read_dims(fields, c));
    SE_RETURN_IF_ERROR(read_rope(fields, c));
    SE_RETURN_IF_ERROR(reject_unsupported(fields));
    SE_RETURN_IF_ERROR(read_flags(fields, c));
    // HF checkpoints keep q/k rows in their original order: RoPE rotates halves.
    c.rope_style = RopeStyle::kNeox;
    SE_RETURN_IF_ERROR(c.validate().with_context(source));
    return c;
}

}  // namespace se
