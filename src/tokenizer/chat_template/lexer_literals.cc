#include "tokenizer/chat_template/lexer_literals.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/chat_template/utf8.h"

namespace se::jinja {
namespace {

constexpr size_t kNoMatch = std::string_view::npos;

bool is_digit_in_base(char c, int base) {
    if (c >= '0' && c <= '9') return c - '0' < base;
    char lower = static_cast<char>(c | 0x20);
    return base == 16 && lower >= 'a' && lower <= 'f';
}

// Matches (\d+_)*\d+ at pos; returns the end or kNoMatch.
size_t match_digits(std::string_view s, size_t pos) {
    if (pos >= s.size() || !is_digit_in_base(s[pos], 10)) return kNoMatch;
    while (pos < s.size()) {
        if (is_digit_in_base(s[pos], 10)) {
            ++pos;
        } else if (s[pos] == '_' && pos + 1 < s.size() && is_digit_in_base(s[pos + 1], 10)) {
            pos += 2;
        } else {
            break;
        }
    }
    return pos;
}

// Matches jinja2's float rule; returns the end or kNoMatch.
size_t match_float(std::string_view s, size_t pos) {
    size_t end = match_digits(s, pos);
    if (end == kNoMatch) return kNoMatch;
    size_t after_fraction = kNoMatch;
    if (end < s.size() && s[end] == '.') after_fraction = match_digits(s, end + 1);
    size_t mantissa_end = after_fraction != kNoMatch ? after_fraction : end;
    if (mantissa_end < s.size() && (s[mantissa_end] == 'e' || s[mantissa_end] == 'E')) {
        size_t exp = mantissa_end + 1;
        if (exp < s.size() && (s[exp] == '+' || s[exp] == '-')) ++exp;
        size_t exp_end = match_digits(s, exp);
        if (exp_end != kNoMatch) return exp_end;
    }
    return after_fraction;
}

// Matches jinja2's integer rule; sets the base; returns the end or kNoMatch.
size_t match_integer(std::string_view s, size_t pos, int* base) {
    *base = 10;
    if (s[pos] == '0' && pos + 1 < s.size()) {
        char prefix = static_cast<char>(s[pos + 1] | 0x20);
        int prefixed = prefix == 'b' ? 2 : (prefix == 'o' ? 8 : (prefix == 'x' ? 16 : 0));
        if (prefixed != 0) {
            size_t end = pos + 2;
            while (true) {
                size_t next = end < s.size() && s[end] == '_' ? end + 1 : end;
                if (next >= s.size() || !is_digit_in_base(s[next], prefixed)) break;
                end = next + 1;
            }
            if (end > pos + 2) {
                *base = prefixed;
                return end;
            }
        }
    }
    if (s[pos] == '0') {
        size_t end = pos + 1;
        while (true) {
            size_t next = end < s.size() && s[end] == '_' ? end + 1 : end;
            if (next >= s.size() || s[next] != '0') break;
            end = next + 1;
        }
        return end;
    }
    return match_digits(s, pos);
}

std::string without_underscores(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c != '_') out += c;
    }
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    char lower = static_cast<char>(c | 0x20);
    if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
    return -1;
}

// Decodes `count` hex digits at body[*i]; false when they are not all there.
bool read_hex(std::u32string_view body, size_t* i, int count, char32_t* cp) {
    char32_t value = 0;
    for (int k = 0; k < count; ++k, ++*i) {
        if (*i >= body.size() || body[*i] > 0x7F || hex_value(static_cast<char>(body[*i])) < 0) {
            return false;
        }
        value = value * 16 + hex_value(static_cast<char>(body[*i]));
    }
    *cp = value;
    return true;
}

// The character a one-letter escape stands for, or 0 when `e` is not one.
char simple_escape(char32_t e) {
    switch (e) {
        case '\\':
            return '\\';
        case '\'':
            return '\'';
        case '"':
            return '"';
        case 'a':
            return '\a';
        case 'b':
            return '\b';
        case 'f':
            return '\f';
        case 'n':
            return '\n';
        case 'r':
            return '\r';
        case 't':
            return '\t';
        case 'v':
            return '\v';
        default:
            return 0;
    }
}

// Python keeps unknown escapes; a non-ASCII character after the backslash went through
// backslashreplace first, so it comes out as its \x/\u/\U spelling.
void append_unknown_escape(std::string& out, char32_t e) {
    out += '\\';
    if (e < 0x80) {
        out += static_cast<char>(e);
        return;
    }
    char buf[16];
    int width = e < 0x100 ? 2 : (e < 0x10000 ? 4 : 8);
    char letter = e < 0x100 ? 'x' : (e < 0x10000 ? 'u' : 'U');
    std::snprintf(buf, sizeof(buf), "%c%0*x", letter, width, static_cast<unsigned>(e));
    out += buf;
}

// Decodes the escape whose letter is at body[*i]; leaves *i on its last character.
Status append_escape(std::u32string_view body, size_t* i, std::string& out) {
    char32_t e = body[*i];
    if (e == '\n') return {};  // a backslash-newline continues the line
    if (char c = simple_escape(e)) {
        out += c;
        return {};
    }
    char32_t cp = 0;
    if (e == 'x' || e == 'u' || e == 'U') {
        int count = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
        ++*i;
        if (!read_hex(body, i, count, &cp) || cp > 0x10FFFF) {
            return invalid_argument("truncated \\" + std::string(1, static_cast<char>(e)) +
                                    " escape in string literal");
        }
        --*i;
        append_utf8(out, cp);
        return {};
    }
    if (e == 'N') return unsupported("\\N{...} escapes in string literals are not supported");
    if (e >= '0' && e <= '7') {
        size_t k = *i;
        while (k < body.size() && k < *i + 3 && body[k] >= '0' && body[k] <= '7') {
            cp = cp * 8 + (body[k++] - '0');
        }
        *i = k - 1;
        append_utf8(out, cp);
        return {};
    }
    append_unknown_escape(out, e);
    return {};
}

// Python's "unicode-escape" decoding of a string literal's body.
Expected<std::string> unescape(std::u32string_view body) {
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
        if (body[i] != '\\' || i + 1 >= body.size()) {
            append_utf8(out, body[i]);
            continue;
        }
        ++i;
        SE_RETURN_IF_ERROR(append_escape(body, &i, out));
    }
    return out;
}

}  // namespace

Expected<size_t> read_number(std::string_view source, size_t pos, Token* token) {
    size_t end = match_float(source, pos);
    if (end == kNoMatch) return read_integer(source, pos, token);
    std::string text = without_underscores(source.substr(pos, end - pos));
    token->kind = TokenKind::kFloat;
    auto result = std::from_chars(text.data(), text.data() + text.size(), token->float_value);
    if (result.ec != std::errc()) token->float_value = HUGE_VAL;  // Python gives inf too
    return end;
}

Expected<size_t> read_integer(std::string_view source, size_t pos, Token* token) {
    int base = 10;
    size_t end = match_integer(source, pos, &base);
    std::string text = without_underscores(source.substr(pos, end - pos));
    if (base != 10) text = text.substr(2);
    token->kind = TokenKind::kInteger;
    auto result = std::from_chars(text.data(), text.data() + text.size(), token->int_value, base);
    if (result.ec != std::errc()) {
        return out_of_range("integer literal " + std::string(source.substr(pos, end - pos)) +
                            " does not fit in 64 bits");
    }
    return end;
}

Expected<size_t> read_string(std::string_view source, size_t pos, Token* token) {
    char quote = source[pos];
    size_t end = pos + 1;
    while (end < source.size() && source[end] != quote) {
        end += source[end] == '\\' ? 2 : 1;
    }
    if (end >= source.size()) return invalid_argument("unterminated string literal");
    SE_ASSIGN_OR_RETURN(token->text, unescape(utf8_decode(source.substr(pos + 1, end - pos - 1))));
    token->kind = TokenKind::kString;
    return end + 1;
}

}  // namespace se::jinja
