#include "server/generation_request.h"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "server/chat_messages.h"
#include "server/json_body.h"

namespace se::server {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The prompt of a completions request: a string, token ids, or a list holding one of those
// (OpenAI's batch form, accepted with exactly one element since n and batches are 1).
std::optional<ApiError> read_prompt(const nlohmann::json& prompt, GenerationRequest& out) {
    const nlohmann::json* p = &prompt;
    if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) {
        p = &(*p)[0];
    }
    if (p->is_string()) {
        out.prompt = p->get<std::string>();
        return std::nullopt;
    }
    if (p->is_array() && !p->empty()) {
        std::vector<int32_t> ids;
        for (const auto& item : *p) {
            auto id = json_integer(item, 0, kInt32Max);
            if (!id) {
                return bad_request(
                    "'prompt' must be a string or a list of token ids (integers >= 0)", "prompt");
            }
            ids.push_back(static_cast<int32_t>(*id));
        }
        out.prompt = std::move(ids);
        return std::nullopt;
    }
    if (p->is_array()) return bad_request("'prompt' is empty", "prompt");
    return bad_request("'prompt' must be a string or a list of token ids", "prompt");
}

void read_logit_bias(FieldReader& reader, SamplingParams& params) {
    const nlohmann::json* bias = reader.any("logit_bias");
    if (!bias) return;
    if (!bias->is_object()) {
        return reader.fail(
            bad_request("'logit_bias' must be an object of token id -> bias", "logit_bias"));
    }
    for (const auto& [key, value] : bias->items()) {
        int64_t id = -1;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > kInt32Max) {
            return reader.fail(bad_request(
                fmt::format("'logit_bias' keys must be token ids, got \"{}\"", key), "logit_bias"));
        }
        if (!value.is_number() || !std::isfinite(value.get<double>())) {
            return reader.fail(bad_request(
                fmt::format("'logit_bias[{}]' must be a finite number", key), "logit_bias"));
        }
        params.logit_bias[static_cast<int32_t>(id)] = value.get<float>();
    }
}

// Fields both endpoints share: vLLM's SamplingParams plus stream and the sparse extensions.
void read_common(FieldReader& reader, GenerationRequest& out) {
    SamplingParams& p = out.params;
    std::optional<std::string> str;
    reader.string("model", str);
    if (str) out.model = *str;
    reader.ignore("user");

    std::optional<double> d;
    const auto number = [&](std::string_view key, float& field) {
        d.reset();
        reader.number(key, d);
        if (d) field = static_cast<float>(*d);
    };
    number("temperature", p.temperature);
    number("top_p", p.top_p);
    number("min_p", p.min_p);
    number("presence_penalty", p.presence_penalty);
    number("frequency_penalty", p.frequency_penalty);
    number("repetition_penalty", p.repetition_penalty);

    const auto integer = [&](std::string_view key, int64_t lo, int64_t hi) {
        std::optional<int64_t> v;
        reader.integer(key, lo, hi, v);
        return v;
    };
    if (auto v = integer("top_k", -1, kInt32Max)) p.top_k = static_cast<int32_t>(*v);
    if (auto v = integer("seed", 0, kInt64Max)) p.seed = static_cast<uint64_t>(*v);
    if (auto v = integer("max_tokens", 1, kInt32Max)) p.max_tokens = static_cast<int32_t>(*v);
    if (auto v = integer("min_tokens", 0, kInt32Max)) p.min_tokens = static_cast<int32_t>(*v);
    if (auto v = integer("n", 1, kInt32Max); v && *v != 1) {
        reader.fail(bad_request(
            fmt::format("'n' must be 1: this server returns one choice per request, got {}", *v),
            "n"));
    }
    if (auto v = integer("best_of", 1, kInt32Max); v && *v != 1) {
        reader.fail(bad_request("'best_of' must be 1", "best_of"));
    }

    std::optional<std::vector<std::string>> stop;
    reader.strings("stop", stop);
    if (stop) p.stop = std::move(*stop);
    std::optional<std::vector<int64_t>> ids;
    reader.integers("stop_token_ids", 0, kInt32Max, ids);
    if (ids) p.stop_token_ids.assign(ids->begin(), ids->end());

    std::optional<bool> b;
    const auto flag = [&](std::string_view key, bool& field) {
        b.reset();
        reader.boolean(key, b);
        if (b) field = *b;
    };
    flag("include_stop_str_in_output", p.include_stop_str_in_output);
    flag("ignore_eos", p.ignore_eos);
    flag("skip_special_tokens", p.skip_special_tokens);
    flag("stream", out.stream);
    read_logit_bias(reader, p);

    if (const nlohmann::json* options = reader.any("stream_options")) {
        if (!options->is_object()) {
            reader.fail(bad_request("'stream_options' must be an object", "stream_options"));
        } else {
            FieldReader sub(*options, "stream_options");
            std::optional<bool> usage;
            sub.boolean("include_usage", usage);
            sub.ignore("continuous_usage_stats");
            if (auto error = sub.finish()) reader.fail(*error);
            out.include_usage = usage.value_or(false);
        }
        if (!out.stream) {
            reader.fail(bad_request("'stream_options' is only allowed with 'stream': true",
                                    "stream_options"));
        }
    }
    str.reset();
    reader.string("cache_salt", str);
    if (str) out.cache_salt = *str;
    str.reset();
    reader.string("chain_id", str);
    if (str) {
        if (str->empty()) reader.fail(bad_request("'chain_id' must not be empty", "chain_id"));
        out.chain_id = *str;
    }
}

void read_completions(FieldReader& reader, GenerationRequest& out) {
    const nlohmann::json* prompt = reader.any("prompt");
    if (!prompt) {
        reader.fail(bad_request("'prompt' is missing", "prompt"));
    } else if (auto error = read_prompt(*prompt, out)) {
        reader.fail(*error);
    }
    std::optional<int64_t> logprobs;
    reader.integer("logprobs", 0, kMaxLogprobs, logprobs);
    if (logprobs) {
        out.want_logprobs = true;
        out.params.logprobs = static_cast<int32_t>(*logprobs);
    }
    std::optional<bool> echo;
    reader.boolean("echo", echo);
    out.echo = echo.value_or(false);
}

void read_chat(FieldReader& reader, GenerationRequest& out) {
    const nlohmann::json* messages = reader.any("messages");
    if (!messages) {
        reader.fail(bad_request("'messages' is missing", "messages"));
    } else if (auto error = read_chat_messages(*messages, "messages", out.messages)) {
        reader.fail(*error);
    }
    std::optional<int64_t> i;
    reader.integer("max_completion_tokens", 1, kInt32Max, i);
    if (i) out.params.max_tokens = static_cast<int32_t>(*i);
    std::optional<bool> logprobs;
    reader.boolean("logprobs", logprobs);
    std::optional<int64_t> top;
    reader.integer("top_logprobs", 0, kMaxLogprobs, top);
    if (top && !logprobs.value_or(false)) {
        reader.fail(bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs"));
    }
    if (logprobs.value_or(false)) {
        out.want_logprobs = true;
        out.params.logprobs = static_cast<int32_t>(top.value_or(0));
    }
    std::optional<bool> b;
    reader.boolean("add_generation_prompt", b);
    out.add_generation_prompt = b.value_or(true);
    b.reset();
    reader.boolean("continue_final_message", b);
    if (b.value_or(false)) {
        reader.fail(
            bad_request("'continue_final_message' is not supported", "continue_final_message"));
    }
    if (const nlohmann::json* kwargs = reader.any("chat_template_kwargs")) {
        if (!kwargs->is_object()) {
            reader.fail(
                bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs"));
        } else {
            out.chat_template_kwargs = nlohmann::ordered_json::parse(kwargs->dump());
        }
    }
    i.reset();
    reader.integer("chain_append_start", 1, kInt32Max, i);
    if (i) {
        out.chain_append_start = static_cast<int32_t>(*i);
        if (out.chain_id.empty()) {
            reader.fail(bad_request("'chain_append_start' needs 'chain_id'", "chain_append_start"));
        } else if (out.messages.is_array() && static_cast<size_t>(*i) >= out.messages.size()) {
            reader.fail(bad_request(
                fmt::format("'chain_append_start' ({}) must leave at least one appended message "
                            "of the {}",
                            *i, out.messages.size()),
                "chain_append_start"));
        }
    }
}

}  // namespace

std::optional<ApiError> parse_generation_request(const nlohmann::json& body, Endpoint endpoint,
                                                 GenerationRequest& out) {
    out.endpoint = endpoint;
    // Completions default to 16 tokens (OpenAI, vLLM); chat to the rest of the context.
    if (endpoint == Endpoint::kChat) out.params.max_tokens = std::nullopt;
    FieldReader reader(body);
    read_common(reader, out);
    if (endpoint == Endpoint::kCompletions) {
        read_completions(reader, out);
    } else {
        read_chat(reader, out);
    }
    return reader.finish();
}

}  // namespace se::server
