// A PromptTokenCounter that needs no model: one token per `chars_per_token` characters of the
// user message and answer prefix (rounded up), plus a fixed template overhead.
#pragma once

#include "eval/prompt_token_counter.h"

namespace se::eval::testing {

class CharCounter final : public PromptTokenCounter {
  public:
    explicit CharCounter(int32_t chars_per_token = 1, int32_t overhead = 20)
        : chars_per_token_(chars_per_token), overhead_(overhead) {}

    Expected<int32_t> count_tokens(const EvalPrompt& prompt) const override {
        ++num_calls_;
        const auto chars = static_cast<int32_t>(prompt.user.size() + prompt.answer_prefix.size());
        return overhead_ + (chars + chars_per_token_ - 1) / chars_per_token_;
    }

    int32_t num_calls() const { return num_calls_; }

  private:
    int32_t chars_per_token_;
    int32_t overhead_;
    mutable int32_t num_calls_ = 0;
};

}  // namespace se::eval::testing
