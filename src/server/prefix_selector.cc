#include "server/prefix_selector.h"

#include <limits>

#include "server/chat_messages.h"

namespace se::server {

std::optional<ApiError> read_prefix_selector(FieldReader& reader, const Engine& engine,
                                             PrefixSelector& out) {
    std::optional<std::vector<int64_t>> ids;
    std::optional<std::string> text;
    std::optional<std::string> salt;
    std::optional<bool> add_generation;
    reader.integers("token_ids", 0, std::numeric_limits<int32_t>::max(), ids);
    reader.string("text", text);
    const nlohmann::json* messages = reader.any("messages");
    reader.boolean("add_generation_prompt", add_generation);
    reader.string("cache_salt", salt);
    reader.ignore("model");
    if (!reader.ok()) return reader.finish();
    if (int(ids.has_value()) + int(text.has_value()) + int(messages != nullptr) != 1) {
        return bad_request("give exactly one selector: 'token_ids', 'text' or 'messages'");
    }
    out.cache_salt = salt.value_or("");
    if (ids) {
        out.tokens.assign(ids->begin(), ids->end());
        return std::nullopt;
    }
    if (!engine.has_tokenizer()) return bad_request("the model has no tokenizer: use 'token_ids'");
    Expected<std::vector<int32_t>> tokens = std::vector<int32_t>{};
    if (text) {
        tokens = engine.tokenizer().encode(*text, {.add_special_tokens = true});
    } else {
        nlohmann::ordered_json list;
        if (auto error = read_chat_messages(*messages, "messages", list)) return error;
        auto rendered = engine.render_chat(
            {.messages = list, .add_generation_prompt = add_generation.value_or(true)});
        if (!rendered.ok()) return to_api_error(rendered.status());
        tokens = engine.tokenizer().encode(rendered.value(), {.add_special_tokens = false});
    }
    if (!tokens.ok()) return to_api_error(tokens.status());
    out.tokens = std::move(tokens).value();
    if (out.tokens.empty()) return bad_request("the selector has no tokens");
    return std::nullopt;
}

}  // namespace se::server
