// UTF-8 decoding with the replacement rule of the Unicode standard ("substitution of maximal
// subparts", §3.9), which Python's errors="replace" and Rust's String::from_utf8_lossy both
// follow: each maximal ill-formed subsequence becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace se::utf8 {

inline constexpr char32_t kReplacementChar = 0xFFFD;

enum class StepKind {
    kChar,       // a well-formed character of `len` bytes
    kInvalid,    // a maximal ill-formed subpart of `len` bytes: one U+FFFD
    kTruncated,  // `len` bytes that start a well-formed character but the input ends first
};

struct Step {
    StepKind kind;
    int len;
    char32_t cp;  // valid when kind == kChar
};

// Decodes the sequence that starts at text[pos] (pos < text.size()).
Step next_step(std::string_view text, size_t pos);

bool is_valid(std::string_view text);

// Byte length of the well-formed character whose first byte is `lead` (text must be valid).
inline int char_len(unsigned char lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Decodes the well-formed character at text[pos]; text must be valid UTF-8.
char32_t decode_at(std::string_view text, size_t pos);

void append(char32_t cp, std::string& out);

// `bytes` with every maximal ill-formed subpart replaced by U+FFFD (a truncated character at
// the end included).
std::string to_valid(std::string_view bytes);

// Appends the lossy decoding of `bytes` to `out`, except a truncated character at the very end,
// which may still be completed by later bytes. Returns how many bytes were consumed.
size_t append_complete_prefix(std::string_view bytes, std::string& out);

}  // namespace se::utf8
