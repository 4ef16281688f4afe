#include "tokenizer/chat_template/percent_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/chat_template/py_string.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

// Field widths and precisions saturate here (beyond kMaxBuiltString, so they fail cleanly).
constexpr int kMaxField = 1 << 30;

struct Spec {
    std::string flags;
    int width = -1;
    int precision = -1;
    char type = 's';
};

Expected<std::string> pad(std::string text, const Spec& spec) {
    if (spec.width < 0) return text;
    size_t length = utf8_length(text);
    if (length >= static_cast<size_t>(spec.width)) return text;
    SE_RETURN_IF_ERROR(check_built_size(spec.width));
    std::string fill(spec.width - length, ' ');
    return spec.flags.find('-') != std::string::npos ? text + fill : fill + text;
}

// snprintf into a string of the exact size.
template <typename T>
std::string c_format(const std::string& format, T value) {
    int size = std::snprintf(nullptr, 0, format.c_str(), value);
    std::string out(static_cast<size_t>(std::max(size, 0)) + 1, '\0');
    std::snprintf(out.data(), out.size(), format.c_str(), value);
    out.pop_back();
    return out;
}

Expected<std::string> format_number(const Value& arg, const Spec& spec) {
    if (!arg.is_number()) {
        return invalid_argument(std::string("%") + spec.type +
                                " format: a real number is required, not " +
                                std::string(arg.type_name()));
    }
    std::string c_spec = "%";
    c_spec += spec.flags;
    if (spec.width >= 0) c_spec += std::to_string(spec.width);
    if (spec.precision >= 0) {
        c_spec += '.';
        c_spec += std::to_string(spec.precision);
    }
    SE_RETURN_IF_ERROR(check_built_size(std::max(spec.width, spec.precision)));
    switch (spec.type) {
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            int64_t v =
                arg.is_float() ? static_cast<int64_t>(std::trunc(arg.as_double())) : arg.as_int();
            char conv = spec.type == 'i' || spec.type == 'u' ? 'd' : spec.type;
            return c_format(c_spec + "ll" + conv, static_cast<long long>(v));
        }
        case 'c': {
            std::string out;
            append_utf8(out, static_cast<char32_t>(arg.as_int()));
            return pad(out, spec);
        }
        default:
            return c_format(c_spec + spec.type, arg.as_double());
    }
}

Expected<std::string> format_one(const Value& arg, const Spec& spec) {
    if (spec.type == 's' || spec.type == 'r' || spec.type == 'a') {
        std::string text = spec.type == 's' ? to_str(arg) : to_repr(arg);
        if (spec.precision >= 0) text = text.substr(0, utf8_offset(text, spec.precision));
        return pad(std::move(text), spec);
    }
    return format_number(arg, spec);
}

}  // namespace

Expected<std::string> percent_format(std::string_view format, const Value& operand) {
    const ValueList args = operand.is_tuple() ? operand.as_list() : ValueList{operand};
    // Python treats a non-tuple operand with __getitem__ as a mapping for %(name)s and then
    // does not insist that it be used.
    const bool mapping_like = !operand.is_tuple() && !operand.is_string() &&
                              (operand.is_list() || operand.is_dict() || operand.is_undefined());
    std::string out;
    size_t next_arg = 0;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (++i >= format.size()) return invalid_argument("incomplete format");
        if (format[i] == '%') {
            out += '%';
            continue;
        }
        if (format[i] == '(') return unsupported("'%(name)s' formatting is not supported");
        Spec spec;
        while (i < format.size() &&
               std::string_view("-+ #0").find(format[i]) != std::string_view::npos) {
            spec.flags += format[i++];
        }
        for (; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
            spec.width = std::min(std::max(spec.width, 0) * 10 + (format[i] - '0'), kMaxField);
        }
        if (i < format.size() && format[i] == '.') {
            spec.precision = 0;
            for (++i; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
                spec.precision = std::min(spec.precision * 10 + (format[i] - '0'), kMaxField);
            }
        }
        if (i >= format.size()) return invalid_argument("incomplete format");
        spec.type = format[i];
        if (std::string_view("sradiuxXocfFeEgG").find(spec.type) == std::string_view::npos) {
            return invalid_argument(std::string("unsupported format character '") + spec.type +
                                    "'");
        }
        if (next_arg >= args.size())
            return invalid_argument("not enough arguments for format string");
        SE_ASSIGN_OR_RETURN(std::string piece, format_one(args[next_arg++], spec));
        out += piece;
    }
    if (next_arg < args.size() && !mapping_like) {
        return invalid_argument("not all arguments converted during string formatting");
    }
    return out;
}

}  // namespace se::jinja
