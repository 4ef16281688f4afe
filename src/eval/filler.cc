#include "eval/filler.h"

#include <array>

#include "core/check.h"

namespace se::eval {

std::string_view filler_sentence(int32_t i) {
    static constexpr std::array<std::string_view, kNumFillerSentences> kSentences = {
        "The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
        "There and back again."};
    SE_CHECK(i >= 0);
    return kSentences[static_cast<size_t>(i % kNumFillerSentences)];
}

}  // namespace se::eval
