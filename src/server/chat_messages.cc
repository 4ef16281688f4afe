#include "server/chat_messages.h"

#include <fmt/core.h>

#include <array>
#include <string>

#include "server/json_body.h"

namespace se::server {
namespace {

constexpr std::array<std::string_view, 5> kRoles = {"system", "developer", "user", "assistant",
                                                    "tool"};

std::optional<ApiError> read_content(const nlohmann::json& content, const std::string& where,
                                     std::string& text) {
    if (content.is_string()) {
        text = content.get<std::string>();
        return std::nullopt;
    }
    if (!content.is_array()) {
        return bad_request(fmt::format("'{}' must be a string or a list of text parts", where),
                           where);
    }
    for (size_t i = 0; i < content.size(); ++i) {
        const nlohmann::json& part = content[i];
        const std::string part_name = fmt::format("{}[{}]", where, i);
        if (!part.is_object()) return bad_request(fmt::format("'{}' must be an object", part_name));
        nlohmann::json type = part.contains("type") ? part["type"] : nlohmann::json();
        if (!type.is_string() || type.get<std::string>() != "text") {
            return bad_request(
                fmt::format("'{}': only parts of type \"text\" are supported", part_name),
                part_name);
        }
        FieldReader reader(part, part_name);
        reader.ignore("type");
        std::optional<std::string> piece;
        reader.string("text", piece);
        if (auto error = reader.finish()) return error;
        if (!piece) return bad_request(fmt::format("'{}.text' is missing", part_name));
        text += *piece;
    }
    return std::nullopt;
}

std::optional<ApiError> read_message(const nlohmann::json& message, const std::string& where,
                                     nlohmann::ordered_json& out) {
    if (!message.is_object()) return bad_request(fmt::format("'{}' must be an object", where));
    FieldReader reader(message, where);
    std::optional<std::string> role;
    std::optional<std::string> name;
    std::optional<std::string> tool_call_id;
    reader.string("role", role);
    reader.string("name", name);
    reader.string("tool_call_id", tool_call_id);
    const nlohmann::json* content = reader.any("content");
    const nlohmann::json* tool_calls = reader.any("tool_calls");
    const nlohmann::json* reasoning = reader.any("reasoning_content");
    if (auto error = reader.finish()) return error;
    if (!role) return bad_request(fmt::format("'{}.role' is missing", where), where + ".role");
    if (std::find(kRoles.begin(), kRoles.end(), *role) == kRoles.end()) {
        return bad_request(fmt::format("'{}.role' must be one of system, developer, user, "
                                       "assistant, tool; got \"{}\"",
                                       where, *role),
                           where + ".role");
    }
    out = nlohmann::ordered_json::object();
    out["role"] = *role;
    if (content) {
        std::string text;
        if (auto error = read_content(*content, where + ".content", text)) return error;
        out["content"] = std::move(text);
    } else if (*role != "assistant" || !tool_calls) {
        return bad_request(fmt::format("'{}.content' is missing", where), where + ".content");
    }
    if (tool_calls) {
        if (!tool_calls->is_array()) {
            return bad_request(fmt::format("'{}.tool_calls' must be a list", where));
        }
        out["tool_calls"] = nlohmann::ordered_json::parse(tool_calls->dump());
    }
    if (reasoning) {
        if (!reasoning->is_string()) {
            return bad_request(fmt::format("'{}.reasoning_content' must be a string", where));
        }
        out["reasoning_content"] = reasoning->get<std::string>();
    }
    if (name) out["name"] = *name;
    if (tool_call_id) out["tool_call_id"] = *tool_call_id;
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> read_chat_messages(const nlohmann::json& list, std::string_view field,
                                           nlohmann::ordered_json& out) {
    if (!list.is_array()) {
        return bad_request(fmt::format("'{}' must be a list of messages", field),
                           std::string(field));
    }
    if (list.empty()) {
        return bad_request(fmt::format("'{}' must hold at least one message", field),
                           std::string(field));
    }
    out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < list.size(); ++i) {
        nlohmann::ordered_json message;
        if (auto error = read_message(list[i], fmt::format("{}[{}]", field, i), message)) {
            return error;
        }
        out.push_back(std::move(message));
    }
    return std::nullopt;
}

}  // namespace se::server
