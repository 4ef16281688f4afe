// Unicode properties and normalization the tokenizer pipeline needs (through utf8proc).
#pragma once

#include <string>
#include <string_view>

#include "core/expected.h"

namespace se::unicode {

// General category N* (Nd, Nl, No): what Rust's char::is_numeric accepts, which the Digits
// pre-tokenizer splits on.
bool is_numeric(char32_t cp);

// The White_Space property (Rust's char::is_whitespace and regex \s).
bool is_white_space(char32_t cp);

// Rust regex's Unicode \w: letters, marks, decimal digits, connector punctuation, letter
// numbers and the joiners. (Alphabetic also holds a few symbols, e.g. circled letters; those
// are included; rarer Other_Alphabetic symbols are not.)
bool is_word_char(char32_t cp);

// Canonical composition (NFC) of valid UTF-8 text.
Expected<std::string> nfc(std::string_view text);

}  // namespace se::unicode
