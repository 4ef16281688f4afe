#include "server/response_json.h"

#include <string_view>

namespace se::server {
namespace {

std::string_view object_name(Endpoint endpoint, bool chunk) {
    if (endpoint == Endpoint::kCompletions) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

nlohmann::json stop_reason_json(const StopReason& reason) {
    if (const auto* id = std::get_if<int32_t>(&reason)) return *id;
    if (const auto* text = std::get_if<std::string>(&reason)) return *text;
    return nullptr;
}

nlohmann::json finish_json(std::optional<FinishReason> finish) {
    if (!finish) return nullptr;
    return std::string(finish_reason_name(*finish));
}

std::string token_string(const Tokenizer& tokenizer, int32_t id) {
    const int32_t one[] = {id};
    auto text = tokenizer.decode(one);
    return text.ok() ? text.value() : std::string();
}

nlohmann::json token_bytes(const std::string& text) {
    nlohmann::json bytes = nlohmann::json::array();
    for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
    return bytes;
}

nlohmann::json envelope(const ResponseMeta& meta, bool chunk) {
    return {{"id", meta.id},
            {"object", object_name(meta.endpoint, chunk)},
            {"created", meta.created},
            {"model", meta.model}};
}

}  // namespace

std::string dump(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json usage_json(const Usage& usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
            {"reused_tokens", usage.reused_tokens}};
}

nlohmann::json logprobs_json(Endpoint endpoint, std::span<const SampledLogprobs> logprobs,
                             std::span<const int32_t> ids, const Tokenizer& tokenizer,
                             size_t text_offset) {
    const size_t n = std::min(logprobs.size(), ids.size());
    if (endpoint == Endpoint::kChat) {
        nlohmann::json content = nlohmann::json::array();
        for (size_t i = 0; i < n; ++i) {
            const std::string token = token_string(tokenizer, ids[i]);
            nlohmann::json top = nlohmann::json::array();
            for (const TokenLogprob& t : logprobs[i].top_logprobs()) {
                const std::string text = token_string(tokenizer, t.token);
                top.push_back(
                    {{"token", text}, {"logprob", t.logprob}, {"bytes", token_bytes(text)}});
            }
            content.push_back({{"token", token},
                               {"logprob", logprobs[i].logprob},
                               {"bytes", token_bytes(token)},
                               {"top_logprobs", std::move(top)}});
        }
        return {{"content", std::move(content)}};
    }
    nlohmann::json tokens = nlohmann::json::array();
    nlohmann::json token_logprobs = nlohmann::json::array();
    nlohmann::json top_logprobs = nlohmann::json::array();
    nlohmann::json offsets = nlohmann::json::array();
    size_t offset = text_offset;
    for (size_t i = 0; i < n; ++i) {
        const std::string token = token_string(tokenizer, ids[i]);
        tokens.push_back(token);
        token_logprobs.push_back(logprobs[i].logprob);
        nlohmann::json top = nlohmann::json::object();
        for (const TokenLogprob& t : logprobs[i].top_logprobs()) {
            top[token_string(tokenizer, t.token)] = t.logprob;
        }
        top_logprobs.push_back(std::move(top));
        offsets.push_back(offset);
        offset += token.size();
    }
    return {{"tokens", std::move(tokens)},
            {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top_logprobs)},
            {"text_offset", std::move(offsets)}};
}

void add_chain_fields(nlohmann::json& body, const RequestOutput& output) {
    if (!output.chain) return;
    body["chain_id"] = output.chain->id;
    body["chain_status"] = std::string(chain_status_name(output.chain->status));
}

nlohmann::json final_response(const ResponseMeta& meta, const RequestOutput& output,
                              const Tokenizer& tokenizer, const std::string& prefix,
                              bool want_logprobs) {
    nlohmann::json body = envelope(meta, false);
    nlohmann::json logprobs = nullptr;
    if (want_logprobs) {
        logprobs = logprobs_json(meta.endpoint, output.logprobs, output.token_ids, tokenizer,
                                 prefix.size());
    }
    nlohmann::json choice = {{"index", 0}};
    if (meta.endpoint == Endpoint::kChat) {
        choice["message"] = {{"role", "assistant"}, {"content", output.text}};
    } else {
        choice["text"] = prefix + output.text;
    }
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = finish_json(output.finish_reason);
    choice["stop_reason"] = stop_reason_json(output.stop_reason);
    body["choices"] = nlohmann::json::array({std::move(choice)});
    body["usage"] = usage_json(output.usage);
    add_chain_fields(body, output);
    return body;
}

nlohmann::json stream_chunk(const ResponseMeta& meta, const std::string& text,
                            nlohmann::json logprobs, std::optional<FinishReason> finish,
                            const StopReason* stop_reason, bool role) {
    nlohmann::json body = envelope(meta, true);
    nlohmann::json choice = {{"index", 0}};
    if (meta.endpoint == Endpoint::kChat) {
        nlohmann::json delta = nlohmann::json::object();
        if (role) delta["role"] = "assistant";
        if (role || !text.empty()) delta["content"] = text;
        choice["delta"] = std::move(delta);
    } else {
        choice["text"] = text;
    }
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = finish_json(finish);
    if (finish) choice["stop_reason"] = stop_reason ? stop_reason_json(*stop_reason) : nullptr;
    body["choices"] = nlohmann::json::array({std::move(choice)});
    return body;
}

nlohmann::json usage_chunk(const ResponseMeta& meta, const RequestOutput& output) {
    nlohmann::json body = envelope(meta, true);
    body["choices"] = nlohmann::json::array();
    body["usage"] = usage_json(output.usage);
    add_chain_fields(body, output);
    return body;
}

}  // namespace se::server
