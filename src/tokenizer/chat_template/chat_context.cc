#include "tokenizer/chat_template/chat_context.h"

#include <string_view>

namespace se {
namespace {

using nlohmann::ordered_json;

// Names a message's reasoning is passed under; the first is the one templates read.
constexpr std::string_view kReasoningFields[] = {"reasoning_content", "thinking", "reasoning"};

ordered_json without_nulls(const ordered_json& message) {
    if (!message.is_object()) return message;
    ordered_json out = ordered_json::object();
    for (const auto& [key, value] : message.items()) {
        if (!value.is_null()) out[key] = value;
    }
    return out;
}

ordered_json alias_reasoning(const ordered_json& message) {
    if (!message.is_object()) return message;
    const ordered_json* reasoning = nullptr;
    for (std::string_view field : kReasoningFields) {
        auto it = message.find(std::string(field));
        if (it != message.end() && !it->is_null()) {
            reasoning = &*it;
            break;
        }
    }
    if (reasoning == nullptr) return message;
    // Python's {"thinking": r, **message, "reasoning_content": r}: "thinking" comes first but
    // keeps the message's own value if it has one.
    ordered_json out = ordered_json::object();
    out["thinking"] = *reasoning;
    for (const auto& [key, value] : message.items()) out[key] = value;
    out["reasoning_content"] = *reasoning;
    return out;
}

}  // namespace

ordered_json make_chat_context(const ChatTemplateInputs& inputs) {
    ordered_json messages = ordered_json::array();
    if (inputs.messages.is_array()) {
        for (const ordered_json& message : inputs.messages) {
            messages.push_back(alias_reasoning(without_nulls(message)));
        }
    }
    ordered_json context = ordered_json::object();
    context["messages"] = std::move(messages);
    context["tools"] = inputs.tools;
    context["documents"] = inputs.documents;
    context["add_generation_prompt"] = inputs.add_generation_prompt;
    for (const auto& [key, value] : inputs.special_tokens.items()) context[key] = value;
    for (const auto& [key, value] : inputs.extra.items()) context[key] = value;
    return context;
}

}  // namespace se
