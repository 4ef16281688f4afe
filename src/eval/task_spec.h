// What a task generator decides for one sample before any filler exists: the texts to hide, how
// deep each goes, the question and what a correct answer must contain. haystack.h turns it into a
// prompt of a given token length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace se::eval {

// No task asks for a longer answer; the CLI keeps this much room after the prompt.
inline constexpr int32_t kMaxAnswerTokens = 64;

struct Insertion {
    std::string text;  // one line, e.g. "The pass key is 71432. Remember it. ..."
    double depth = 0;  // in [0, 1]: the fraction of the filler that comes before it
};

struct TaskSpec {
    std::string instruction;            // before the haystack
    std::vector<Insertion> insertions;  // ascending depth; equal depths keep this order
    std::string question;               // after the haystack
    std::string answer_prefix;          // the assistant's turn starts with it
    std::vector<std::string> expected;  // a correct answer contains every one (see scorer.h)
    int32_t max_new_tokens = 16;        // enough for the answer; at most kMaxAnswerTokens
};

}  // namespace se::eval
