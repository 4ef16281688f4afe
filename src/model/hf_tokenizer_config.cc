#include "model/hf_tokenizer_config.h"

#include "model/json_fields.h"

namespace se {
namespace {

Expected<std::string> chat_template(const JsonFields& fields) {
    const nlohmann::json* v = fields.find("chat_template");
    if (v == nullptr) return std::string();
    if (v->is_string()) return v->get<std::string>();
    if (!v->is_array())
        return fields.type_error("chat_template", "a string or a list of {name, template}");
    for (const nlohmann::json& entry : *v) {
        if (!entry.is_object())
            return fields.type_error("chat_template", "a string or a list of {name, template}");
        const JsonFields named(entry, fields.source(), "chat_template[].");
        SE_ASSIGN_OR_RETURN(const std::optional<std::string> name, named.find_string("name"));
        SE_ASSIGN_OR_RETURN(const std::optional<std::string> text, named.find_string("template"));
        if (name == "default" && text) return *text;
    }
    // No default: templates are only reachable by name, which the engine never passes.
    return std::string();
}

// A special token written as "<s>" or as {"content": "<s>", ...}.
Expected<std::optional<std::string>> special_token(const JsonFields& fields, std::string_view key) {
    const nlohmann::json* v = fields.find(key);
    if (v == nullptr || v->is_string()) return fields.find_string(key);
    if (!v->is_object()) return fields.type_error(key, "a string or an object with 'content'");
    const JsonFields token(*v, fields.source(), fields.field_name(key) + ".");
    return token.find_string("content");
}

}  // namespace

Expected<HfTokenizerConfig> parse_tokenizer_config(std::string_view json_text,
                                                   const std::string& source) {
    HfTokenizerConfig config;
    SE_ASSIGN_OR_RETURN(config.json, parse_json(json_text, source));
    if (!config.json.is_object()) return data_loss(source + ": expected a JSON object");
    const JsonFields fields(config.json, source);
    SE_ASSIGN_OR_RETURN(config.chat_template, chat_template(fields));
    SE_ASSIGN_OR_RETURN(config.bos_token, special_token(fields, "bos_token"));
    SE_ASSIGN_OR_RETURN(config.eos_token, special_token(fields, "eos_token"));
    SE_ASSIGN_OR_RETURN(config.add_bos_token, fields.find_bool("add_bos_token"));
    return config;
}

}  // namespace se
