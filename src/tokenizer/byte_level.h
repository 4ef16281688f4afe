// GPT-2's byte-level alphabet: a reversible map from the 256 byte values to printable code
// points, so that any byte string can be written as a string of visible characters. Byte-level
// BPE vocabularies (tokenizer.json and GGUF "gpt2") store their tokens in this alphabet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace se::byte_level {

char32_t byte_to_char(uint8_t byte);

// The byte a code point stands for, or nullopt when it is not in the alphabet.
std::optional<uint8_t> char_to_byte(char32_t cp);

// `bytes` written in the byte-level alphabet (UTF-8 encoded).
std::string encode(std::string_view bytes);

// The bytes a byte-level string stands for, or nullopt when `text` is not valid UTF-8 or holds
// a character outside the alphabet.
std::optional<std::string> decode(std::string_view text);

}  // namespace se::byte_level
