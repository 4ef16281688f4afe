#include "tokenizer/chat_template/utf8.h"

#include "core/utf8.h"

#include <utf8proc.h>

#include <algorithm>

namespace se::jinja {
namespace {

constexpr char32_t kEscapeBase = 0xDC00;

// Length of the sequence a lead byte starts, 0 when it cannot start one.
int sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

// Decodes one code point at `pos`; returns the number of bytes consumed.
size_t decode_one(std::string_view text, size_t pos, char32_t* cp) {
    auto lead = static_cast<unsigned char>(text[pos]);
    int len = sequence_length(lead);
    if (len == 1) {
        *cp = lead;
        return 1;
    }
    if (len == 0 || pos + len > text.size()) {
        *cp = kEscapeBase + lead;
        return 1;
    }
    char32_t value = lead & (0xFF >> (len + 1));
    for (int i = 1; i < len; ++i) {
        auto byte = static_cast<unsigned char>(text[pos + i]);
        if ((byte & 0xC0) != 0x80) {
            *cp = kEscapeBase + lead;
            return 1;
        }
        value = (value << 6) | (byte & 0x3F);
    }
    static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < kMinimum[len] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
        *cp = kEscapeBase + lead;
        return 1;
    }
    *cp = value;
    return len;
}

utf8proc_category_t category(char32_t cp) {
    return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

}  // namespace

std::u32string utf8_decode(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        char32_t cp;
        pos += decode_one(text, pos, &cp);
        out.push_back(cp);
    }
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp >= kEscapeBase + 0x80 && cp <= kEscapeBase + 0xFF) {
        out.push_back(static_cast<char>(cp - kEscapeBase));
    } else {
        utf8::append(cp, out);
    }
}

std::string utf8_encode(std::u32string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t cp : text) append_utf8(out, cp);
    return out;
}

bool is_ascii(std::string_view text) {
    for (char c : text) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
}

size_t utf8_length(std::string_view text) {
    if (is_ascii(text)) return text.size();
    size_t count = 0;
    for (size_t pos = 0; pos < text.size(); ++count) {
        char32_t cp;
        pos += decode_one(text, pos, &cp);
    }
    return count;
}

size_t utf8_offset(std::string_view text, size_t index) {
    size_t pos = 0;
    for (size_t i = 0; i < index && pos < text.size(); ++i) {
        char32_t cp;
        pos += decode_one(text, pos, &cp);
    }
    return pos;
}

bool is_python_space(char32_t cp) {
    switch (cp) {
        case 0x09:
        case 0x0A:
        case 0x0B:
        case 0x0C:
        case 0x0D:
        case 0x1C:
        case 0x1D:
        case 0x1E:
        case 0x1F:
        case 0x20:
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool is_printable(char32_t cp) {
    if (cp == ' ') return true;
    if (cp < 0x20 || cp == 0x7F) return false;
    if (cp < 0x7F) return true;
    // Python counts "Other" (Cc, Cf, Cs, Co, Cn) and separators other than ' ' as unprintable.
    static constexpr utf8proc_category_t kUnprintable[] = {
        UTF8PROC_CATEGORY_CN, UTF8PROC_CATEGORY_CC, UTF8PROC_CATEGORY_CF, UTF8PROC_CATEGORY_CS,
        UTF8PROC_CATEGORY_CO, UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP,
    };
    utf8proc_category_t c = category(cp);
    return std::find(std::begin(kUnprintable), std::end(kUnprintable), c) == std::end(kUnprintable);
}

bool is_alpha(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    auto c = category(cp);
    return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool is_digit(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return category(cp) == UTF8PROC_CATEGORY_ND;
}

bool is_upper(char32_t cp) {
    if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
    return category(cp) == UTF8PROC_CATEGORY_LU;
}

bool is_lower(char32_t cp) {
    if (cp < 0x80) return cp >= 'a' && cp <= 'z';
    return category(cp) == UTF8PROC_CATEGORY_LL;
}

char32_t to_upper(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}

char32_t to_lower(char32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

std::string upper_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t cp : utf8_decode(text)) append_utf8(out, to_upper(cp));
    return out;
}

std::string lower_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t cp : utf8_decode(text)) append_utf8(out, to_lower(cp));
    return out;
}

}  // namespace se::jinja
