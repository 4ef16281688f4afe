// Response bodies and stream chunks in OpenAI's shapes (text_completion, chat.completion,
// chat.completion.chunk), with vLLM's stop_reason and the sparse extensions (chain_id,
// chain_status, usage.reused_tokens).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "engine/request.h"
#include "server/generation_request.h"
#include "tokenizer/tokenizer.h"

namespace se::server {

struct ResponseMeta {
    std::string id;  // "cmpl-N" / "chatcmpl-N"
    int64_t created = 0;
    std::string model;
    Endpoint endpoint = Endpoint::kCompletions;
};

nlohmann::json usage_json(const Usage& usage);

// Logprobs of the tokens `ids` (one SampledLogprobs each) as the endpoint reports them;
// `text_offset` is where the first token's text starts in the choice's text (completions).
nlohmann::json logprobs_json(Endpoint endpoint, std::span<const SampledLogprobs> logprobs,
                             std::span<const int32_t> ids, const Tokenizer& tokenizer,
                             size_t text_offset);

// The whole response of a finished request; `prefix` is prepended to the text (echo).
nlohmann::json final_response(const ResponseMeta& meta, const RequestOutput& output,
                              const Tokenizer& tokenizer, const std::string& prefix,
                              bool want_logprobs);

// One stream chunk with one choice. `text` and `logprobs` may be empty / null; a chat chunk
// with `role` set announces the assistant's turn.
nlohmann::json stream_chunk(const ResponseMeta& meta, const std::string& text,
                            nlohmann::json logprobs, std::optional<FinishReason> finish,
                            const StopReason* stop_reason = nullptr, bool role = false);

// The final usage chunk (choices empty) and the chain fields, when the request named one.
nlohmann::json usage_chunk(const ResponseMeta& meta, const RequestOutput& output);
void add_chain_fields(nlohmann::json& body, const RequestOutput& output);

// JSON text for the wire: invalid UTF-8 (never expected) is replaced, not thrown on.
std::string dump(const nlohmann::json& value);

}  // namespace se::server
