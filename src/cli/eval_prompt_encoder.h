// The eval prompts as the model sees them: the user message through the model's chat template,
// then the assistant's turn opened with the answer prefix, encoded by the model's tokenizer.
#pragma once

#include <vector>

#include "engine/engine.h"
#include "eval/prompt_token_counter.h"

namespace se::cli {

class ChatPromptEncoder final : public eval::PromptTokenCounter {
  public:
    explicit ChatPromptEncoder(const Engine& engine) : engine_(engine) {}

    Expected<std::vector<int32_t>> encode(const eval::EvalPrompt& prompt) const;
    Expected<int32_t> count_tokens(const eval::EvalPrompt& prompt) const override;

  private:
    const Engine& engine_;
};

}  // namespace se::cli
