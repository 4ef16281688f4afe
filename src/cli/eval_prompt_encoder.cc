#include "cli/eval_prompt_encoder.h"

namespace se::cli {

Expected<std::vector<int32_t>> ChatPromptEncoder::encode(const eval::EvalPrompt& prompt) const {
    if (!engine_.has_tokenizer()) return failed_precondition("the model has no tokenizer");
    const nlohmann::ordered_json messages =
        nlohmann::ordered_json::array({{{"role", "user"}, {"content", prompt.user}}});
    SE_ASSIGN_OR_RETURN(std::string text,
                        engine_.render_chat({.messages = messages, .add_generation_prompt = true}));
    // The template wrote the special tokens; the tokenizer adds none.
    return engine_.tokenizer().encode(text + prompt.answer_prefix, {.add_special_tokens = false});
}

Expected<int32_t> ChatPromptEncoder::count_tokens(const eval::EvalPrompt& prompt) const {
    SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, encode(prompt));
    return static_cast<int32_t>(ids.size());
}

}  // namespace se::cli
