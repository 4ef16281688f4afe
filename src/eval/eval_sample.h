// One generated test case: the prompt the model sees and how its answer is judged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace se::eval {

// The model's prompt before the chat template: one user message, then the assistant's turn
// opened with answer_prefix (identical for every method, so scores stay comparable).
struct EvalPrompt {
    std::string user;           // instruction, haystack with the needles, question
    std::string answer_prefix;  // e.g. "The pass key is"
};

struct EvalSample {
    std::string task;
    int32_t index = 0;
    EvalPrompt prompt;
    std::vector<std::string> expected;  // every one must appear in the answer
    std::vector<double> depths;         // requested depth of each insertion, in [0, 1]
    int32_t num_filler_sentences = 0;
    int32_t num_prompt_tokens = 0;  // as the PromptTokenCounter counted the whole prompt
    int32_t max_new_tokens = 16;
};

}  // namespace se::eval
