// The neutral text the needles hide in: RULER's "noise" haystack, five sentences repeated.
#pragma once

#include <cstdint>
#include <string_view>

namespace se::eval {

inline constexpr int32_t kNumFillerSentences = 5;

// Sentence i of the endless filler (i >= 0): the five sentences in a fixed cycle.
std::string_view filler_sentence(int32_t i);

}  // namespace se::eval
