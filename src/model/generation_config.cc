#include "model/generation_config.h"

#include "model/json_fields.h"

namespace se {
namespace {

Expected<std::optional<float>> find_float(const JsonFields& fields, std::string_view key) {
    SE_ASSIGN_OR_RETURN(const std::optional<double> v, fields.find_number(key));
    if (!v) return std::optional<float>();
    return std::optional<float>(static_cast<float>(*v));
}

}  // namespace

Expected<GenerationDefaults> parse_generation_config(std::string_view json_text,
                                                     const std::string& source) {
    SE_ASSIGN_OR_RETURN(const nlohmann::json json, parse_json(json_text, source));
    if (!json.is_object()) return data_loss(source + ": expected a JSON object");
    const JsonFields fields(json, source);
    GenerationDefaults g;
    SE_ASSIGN_OR_RETURN(g.eos_token_ids, fields.find_i32_list("eos_token_id"));
    SE_ASSIGN_OR_RETURN(g.do_sample, fields.find_bool("do_sample"));
    SE_ASSIGN_OR_RETURN(g.temperature, find_float(fields, "temperature"));
    SE_ASSIGN_OR_RETURN(g.top_p, find_float(fields, "top_p"));
    SE_ASSIGN_OR_RETURN(g.top_k, fields.find_i32("top_k"));
    SE_ASSIGN_OR_RETURN(g.repetition_penalty, find_float(fields, "repetition_penalty"));
    return g;
}

}  // namespace se
