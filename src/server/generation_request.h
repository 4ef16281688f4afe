// The body of POST /v1/completions and POST /v1/chat/completions, read strictly (json_body.h):
// OpenAI's fields, vLLM's sampling extras, and the sparse extensions (chain_id,
// chain_append_start). Values the engine checks anyway (ranges of sampling parameters, token
// ids inside the vocabulary, prompt length) are left to it; this layer checks shapes and types.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/sampling/sampling_params.h"
#include "server/api_error.h"

namespace se::server {

enum class Endpoint { kCompletions, kChat };

struct GenerationRequest {
    Endpoint endpoint = Endpoint::kCompletions;
    std::string model;  // empty: the served model
    // Completions: the prompt as text or as token ids.
    std::variant<std::string, std::vector<int32_t>> prompt;
    // Chat: the conversation ({role, content: string} each) and template options.
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    bool add_generation_prompt = true;
    nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
    int32_t chain_append_start = 0;  // 0: render the whole conversation

    SamplingParams params;
    bool stream = false;
    bool include_usage = false;
    bool echo = false;           // completions: the prompt text precedes the output
    bool want_logprobs = false;  // logprobs of each output token are returned
    std::string cache_salt;
    std::string chain_id;
};

// Reads `body` (a JSON object) for `endpoint`; 400 naming the first bad field.
std::optional<ApiError> parse_generation_request(const nlohmann::json& body, Endpoint endpoint,
                                                 GenerationRequest& out);

}  // namespace se::server
