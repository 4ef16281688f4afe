#include "core/utf8.h"

namespace se::utf8 {
namespace {

bool is_continuation(unsigned char b) {
    return (b & 0xC0) == 0x80;
}

// Range the second byte must fall in for a lead byte (Unicode Table 3-7); the later
// continuation bytes are always 80..BF.
void second_byte_range(unsigned char lead, unsigned char& lo, unsigned char& hi) {
    lo = 0x80;
    hi = 0xBF;
    if (lead == 0xE0)
        lo = 0xA0;  // no overlong 3-byte forms
    else if (lead == 0xED)
        hi = 0x9F;  // no surrogates
    else if (lead == 0xF0)
        lo = 0x90;  // no overlong 4-byte forms
    else if (lead == 0xF4)
        hi = 0x8F;  // nothing above U+10FFFF
}

}  // namespace

Step next_step(std::string_view text, size_t pos) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    if (lead < 0x80) return {StepKind::kChar, 1, lead};
    if (lead < 0xC2 || lead > 0xF4) return {StepKind::kInvalid, 1, 0};
    const int need = char_len(lead);
    char32_t cp = lead & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
    unsigned char lo, hi;
    second_byte_range(lead, lo, hi);
    for (int i = 1; i < need; ++i) {
        if (pos + i >= text.size()) return {StepKind::kTruncated, i, 0};
        const auto b = static_cast<unsigned char>(text[pos + i]);
        if (b < lo || b > hi) return {StepKind::kInvalid, i, 0};
        cp = (cp << 6) | (b & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    return {StepKind::kChar, need, cp};
}

bool is_valid(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        // ASCII runs are the common case; skip them without the full decoder.
        if (static_cast<unsigned char>(text[pos]) < 0x80) {
            ++pos;
            continue;
        }
        const Step step = next_step(text, pos);
        if (step.kind != StepKind::kChar) return false;
        pos += step.len;
    }
    return true;
}

char32_t decode_at(std::string_view text, size_t pos) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    const int len = char_len(lead);
    if (len == 1) return lead;
    char32_t cp = lead & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (int i = 1; i < len && is_continuation(static_cast<unsigned char>(text[pos + i])); ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    return cp;
}

void append(char32_t cp, std::string& out) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string to_valid(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() + 8);
    const size_t consumed = append_complete_prefix(bytes, out);
    if (consumed < bytes.size())
        append(kReplacementChar, out);  // a truncated character at the end is one subpart
    return out;
}

size_t append_complete_prefix(std::string_view bytes, std::string& out) {
    size_t pos = 0;
    while (pos < bytes.size()) {
        const Step step = next_step(bytes, pos);
        if (step.kind == StepKind::kTruncated) return pos;
        if (step.kind == StepKind::kChar)
            out.append(bytes.substr(pos, step.len));
        else
            append(kReplacementChar, out);
        pos += step.len;
    }
    return pos;
}

}  // namespace se::utf8
