// Turns a TaskSpec into a prompt of a given token length: filler sentences with the insertions
// hidden at their depths, as many sentences as fit.
//
//   user message:  instruction
//                  (blank line)
//                  s0 s1 ... s(k-1)          k = round(depth * num_sentences)
//                  <insertion>               each on a line of its own
//                  s(k) ... s(n-1)
//                  (blank line)
//                  question
//   assistant:     answer_prefix ▌ (the model continues here)
#pragma once

#include <cstdint>

#include "core/expected.h"
#include "eval/eval_sample.h"
#include "eval/prompt_token_counter.h"
#include "eval/task_spec.h"

namespace se::eval {

// The prompt of `spec` with `num_sentences` filler sentences.
EvalPrompt render_prompt(const TaskSpec& spec, int32_t num_sentences);

struct FittedPrompt {
    EvalPrompt prompt;
    int32_t num_sentences = 0;
    int32_t num_tokens = 0;
};

// The prompt with the most filler sentences whose token count is at most `target_tokens`: one
// more sentence would pass the target, so the prompt falls short of it by less than about one
// sentence. An out-of-range error when even the prompt without filler is longer.
Expected<FittedPrompt> fit_prompt(const TaskSpec& spec, int32_t target_tokens,
                                  const PromptTokenCounter& counter);

}  // namespace se::eval
