#include "tokenizer/byte_level.h"

#include <array>

#include "core/utf8.h"

namespace se::byte_level {
namespace {

// Printable Latin-1 bytes keep their code point; the other 68 bytes (controls, space, DEL,
// NBSP, soft hyphen...) take 256, 257, ... in byte order. Immutable, built once.
const std::array<char32_t, 256>& byte_table() {
    static const std::array<char32_t, 256> table = [] {
        std::array<char32_t, 256> t{};
        char32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            t[b] = printable ? static_cast<char32_t>(b) : next++;
        }
        return t;
    }();
    return table;
}

// Inverse of byte_table over the code points it produces (all below 512); -1 elsewhere.
const std::array<int16_t, 512>& char_table() {
    static const std::array<int16_t, 512> table = [] {
        std::array<int16_t, 512> t{};
        t.fill(-1);
        for (int b = 0; b < 256; ++b) t[byte_table()[b]] = static_cast<int16_t>(b);
        return t;
    }();
    return table;
}

}  // namespace

char32_t byte_to_char(uint8_t byte) {
    return byte_table()[byte];
}

std::optional<uint8_t> char_to_byte(char32_t cp) {
    if (cp >= 512 || char_table()[cp] < 0) return std::nullopt;
    return static_cast<uint8_t>(char_table()[cp]);
}

std::string encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) utf8::append(byte_to_char(static_cast<uint8_t>(c)), out);
    return out;
}

std::optional<std::string> decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const utf8::Step step = utf8::next_step(text, pos);
        if (step.kind != utf8::StepKind::kChar) return std::nullopt;
        const std::optional<uint8_t> byte = char_to_byte(step.cp);
        if (!byte) return std::nullopt;
        out.push_back(static_cast<char>(*byte));
        pos += step.len;
    }
    return out;
}

}  // namespace se::byte_level
