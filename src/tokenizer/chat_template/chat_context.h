// The variables transformers' apply_chat_template hands a chat template, built from a request:
// messages with null-valued keys dropped and reasoning aliased, tools, documents,
// add_generation_prompt, the tokenizer's special tokens and extra template arguments.
#pragma once

#include <nlohmann/json.hpp>

namespace se {

struct ChatTemplateInputs {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{role, content, ...}]
    nlohmann::ordered_json tools = nullptr;      // null or an array of JSON schemas
    nlohmann::ordered_json documents = nullptr;  // null or an array of {title, text}
    bool add_generation_prompt = false;
    // bos_token, eos_token, ... as the tokenizer names them; absent tokens are left out.
    nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
    // enable_thinking, date_string, ...; these win over special tokens of the same name.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// Mirrors transformers: a message key whose value is null is dropped (templates treat a
// missing key better than None), and a message carrying reasoning under "reasoning_content",
// "thinking" or "reasoning" gets it under both "thinking" (first) and "reasoning_content".
nlohmann::ordered_json make_chat_context(const ChatTemplateInputs& inputs);

}  // namespace se
