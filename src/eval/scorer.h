// Scoring one answer, as RULER's string match: the answer must contain every expected string
// (all-or-nothing, so vartrack needs every variable name).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace se::eval {

// True when every `expected` string occurs in `answer` as a whole word: case-insensitive, and
// the characters on either side of the match are neither letters nor digits (so "714320" does not
// answer "71432"). `expected` is not empty.
bool is_correct(std::span<const std::string> expected, std::string_view answer);

}  // namespace se::eval
