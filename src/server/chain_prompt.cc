#include "server/chain_prompt.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>

namespace se::server {
namespace {

// Tokens of the transcript's end decoded to find what the reply ended with.
constexpr size_t kTailTokens = 8;

// The longest suffix of `text` that is a prefix of `next`.
size_t overlap(std::string_view text, std::string_view next) {
    for (size_t n = std::min(text.size(), next.size()); n > 0; --n) {
        if (text.substr(text.size() - n) == next.substr(0, n)) return n;
    }
    return 0;
}

}  // namespace

Expected<std::vector<int32_t>> chain_prompt(const Engine& engine,
                                            std::span<const int32_t> transcript,
                                            const nlohmann::ordered_json& messages,
                                            int32_t append_start,
                                            const nlohmann::ordered_json& template_kwargs) {
    const auto k = static_cast<size_t>(append_start);
    nlohmann::ordered_json held = nlohmann::ordered_json::array();
    for (size_t i = 0; i < k; ++i) held.push_back(messages[i]);
    SE_ASSIGN_OR_RETURN(std::string head, engine.render_chat({.messages = held,
                                                              .add_generation_prompt = false,
                                                              .extra = template_kwargs}));
    SE_ASSIGN_OR_RETURN(std::string full, engine.render_chat({.messages = messages,
                                                              .add_generation_prompt = true,
                                                              .extra = template_kwargs}));
    if (full.compare(0, head.size(), head) != 0) {
        return invalid_argument(fmt::format(
            "chain_append_start {}: the chat template renders messages[:{}] differently once "
            "more messages follow, so the appended messages cannot be rendered alone",
            append_start, append_start));
    }
    // What the template writes after the last held message's content.
    std::string end_of_turn;
    const nlohmann::ordered_json& last = held.back();
    if (last.contains("content") && last["content"].is_string()) {
        const std::string content = last["content"].get<std::string>();
        const size_t at = content.empty() ? std::string::npos : head.rfind(content);
        if (at != std::string::npos) end_of_turn = head.substr(at + content.size());
    }
    const size_t tail_from = transcript.size() > kTailTokens ? transcript.size() - kTailTokens : 0;
    SE_ASSIGN_OR_RETURN(std::string tail, engine.tokenizer().decode(transcript.subspan(tail_from)));
    const std::string appended =
        end_of_turn.substr(overlap(tail, end_of_turn)) + full.substr(head.size());
    SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                        engine.tokenizer().encode(appended, {.add_special_tokens = false}));
    std::vector<int32_t> prompt(transcript.begin(), transcript.end());
    prompt.insert(prompt.end(), ids.begin(), ids.end());
    return prompt;
}

}  // namespace se::server
