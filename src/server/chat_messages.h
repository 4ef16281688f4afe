// Chat messages as the OpenAI API sends them, checked and normalised for the chat template:
// roles system, developer, user, assistant, tool; content a string or a list of text parts
// (joined), null only for an assistant message that carries tool_calls.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "server/api_error.h"

namespace se::server {

// `field` names the list in errors ("messages"). Returns 400 naming the message and key.
std::optional<ApiError> read_chat_messages(const nlohmann::json& list, std::string_view field,
                                           nlohmann::ordered_json& out);

}  // namespace se::server
