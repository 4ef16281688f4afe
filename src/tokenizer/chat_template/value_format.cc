#include "tokenizer/chat_template/value_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/chat_template/utf8.h"

namespace se::jinja {
namespace {

void append_repr(std::string& out, const Value& value);

void append_list_repr(std::string& out, const Value& value) {
    const ValueList& items = value.as_list();
    out += value.is_tuple() ? '(' : '[';
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, items[i]);
    }
    if (value.is_tuple() && items.size() == 1) out += ',';
    out += value.is_tuple() ? ')' : ']';
}

void append_dict_repr(std::string& out, const DictData& dict) {
    out += '{';
    for (size_t i = 0; i < dict.items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, dict.items[i].first);
        out += ": ";
        append_repr(out, dict.items[i].second);
    }
    out += '}';
}

void append_repr(std::string& out, const Value& value) {
    switch (value.kind()) {
        case Value::Kind::kUndefined:
            out += "Undefined";
            return;
        case Value::Kind::kString:
            out += string_repr(value.as_string());
            return;
        case Value::Kind::kList:
            append_list_repr(out, value);
            return;
        case Value::Kind::kDict:
            append_dict_repr(out, value.as_dict());
            return;
        case Value::Kind::kNamespace:
            out += "<Namespace ";
            append_dict_repr(out, value.as_namespace().attrs);
            out += '>';
            return;
        case Value::Kind::kNone:
        case Value::Kind::kBool:
        case Value::Kind::kInt:
        case Value::Kind::kFloat:
        case Value::Kind::kCallable:
            out += to_str(value);
            return;
    }
}

void append_escaped(std::string& out, char32_t cp) {
    char buf[16];
    if (cp < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
    } else if (cp < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
    } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
    }
    out += buf;
}

}  // namespace

std::string string_repr(std::string_view text) {
    bool has_single = text.find('\'') != std::string_view::npos;
    bool has_double = text.find('"') != std::string_view::npos;
    char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t cp : utf8_decode(text)) {
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (!is_printable(cp)) {
            append_escaped(out, cp);
        } else {
            append_utf8(out, cp);
        }
    }
    out += quote;
    return out;
}

std::string float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
    char buf[64];
    auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
    std::string sci(buf, result.ptr);
    // sci is "[-]d[.ddd]e[+-]XX" with the shortest digits that round-trip.
    std::string out;
    size_t pos = 0;
    if (sci[0] == '-') {
        out += '-';
        pos = 1;
    }
    size_t e_pos = sci.find('e');
    std::string digits;
    for (size_t i = pos; i < e_pos; ++i) {
        if (sci[i] != '.') digits += sci[i];
    }
    int exponent = std::stoi(sci.substr(e_pos + 1));
    if (exponent < -4 || exponent >= 16) {
        out += digits[0];
        if (digits.size() > 1) {
            out += '.';
            out.append(digits, 1);
        }
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                      std::abs(exponent));
        return out + exp_buf;
    }
    if (exponent < 0) {
        return out + "0." + std::string(-exponent - 1, '0') + digits;
    }
    size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
        return out + digits + std::string(int_len - digits.size(), '0') + ".0";
    }
    return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string to_str(const Value& value) {
    switch (value.kind()) {
        case Value::Kind::kUndefined:
            return "";
        case Value::Kind::kNone:
            return "None";
        case Value::Kind::kBool:
            return value.as_bool() ? "True" : "False";
        case Value::Kind::kInt:
            return std::to_string(value.as_int());
        case Value::Kind::kFloat:
            return float_repr(value.as_double());
        case Value::Kind::kString:
            return value.as_string();
        case Value::Kind::kCallable:
            return "<function " + value.as_callable().name + ">";
        case Value::Kind::kList:
        case Value::Kind::kDict:
        case Value::Kind::kNamespace:
            break;
    }
    std::string out;
    append_repr(out, value);
    return out;
}

std::string to_repr(const Value& value) {
    std::string out;
    append_repr(out, value);
    return out;
}

}  // namespace se::jinja
