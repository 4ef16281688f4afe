// Number and string literals inside tags, decoded the way jinja2 decodes them (Python literal
// rules: underscores in numbers, backslash escapes in strings).
#pragma once

#include <string_view>

#include "core/expected.h"
#include "tokenizer/chat_template/lexer.h"

namespace se::jinja {

// Reads the number at `pos` into `token` (kind kInteger or kFloat); returns the end offset.
Expected<size_t> read_number(std::string_view source, size_t pos, Token* token);
// The same for integers only: right after a '.', so `x.0.1` reads as attributes, as in jinja2.
Expected<size_t> read_integer(std::string_view source, size_t pos, Token* token);

// Reads the quoted string at `pos` into `token` (kind kString); returns the end offset.
Expected<size_t> read_string(std::string_view source, size_t pos, Token* token);

}  // namespace se::jinja
