// Code-point views of UTF-8 strings. Template strings are Python str values: lengths, indices and
// slices count code points, and whitespace and case follow Python's Unicode rules.
#pragma once

#include <string>
#include <string_view>

namespace se::jinja {

// Decodes UTF-8. A byte that is not part of a valid sequence maps to U+DC80..U+DCFF (Python's
// surrogateescape), so encode(decode(s)) == s for any bytes.
std::u32string utf8_decode(std::string_view text);
std::string utf8_encode(std::u32string_view text);
void append_utf8(std::string& out, char32_t cp);

bool is_ascii(std::string_view text);
size_t utf8_length(std::string_view text);

// Byte offset of code point `index` (clamped to the end).
size_t utf8_offset(std::string_view text, size_t index);

// Python's str.isspace().
bool is_python_space(char32_t cp);
// Python's str.isprintable() for one code point (decides escaping in repr()).
bool is_printable(char32_t cp);
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
bool is_upper(char32_t cp);
bool is_lower(char32_t cp);

// Simple (one code point to one code point) case mappings.
char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);
std::string upper_utf8(std::string_view text);
std::string lower_utf8(std::string_view text);

}  // namespace se::jinja
