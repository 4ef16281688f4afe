// How the generators measure a prompt while they size its filler. The CLI counts with the
// model's chat template and tokenizer; tests use a counter that needs no model.
#pragma once

#include <cstdint>

#include "core/expected.h"
#include "eval/eval_sample.h"

namespace se::eval {

class PromptTokenCounter {
  public:
    virtual ~PromptTokenCounter() = default;
    // Tokens of the whole prompt the model would see for `prompt`: template, user message and
    // answer prefix. Must grow with the user message (the generators search on it).
    virtual Expected<int32_t> count_tokens(const EvalPrompt& prompt) const = 0;
};

}  // namespace se::eval
