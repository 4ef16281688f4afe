// Number filters: int, float, abs, round, with Python's parsing and rounding rules.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/py_string.h"
#include "tokenizer/chat_template/utf8.h"

namespace se::jinja {
namespace {

std::string without_underscores(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        // Python accepts single underscores between digits only.
        if (text[i] == '_') {
            if (i == 0 || i + 1 >= text.size() ||
                !std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                !std::isalnum(static_cast<unsigned char>(text[i + 1]))) {
                return {};
            }
            continue;
        }
        out += text[i];
    }
    return out;
}

// Python's int(text, base); nullopt where Python raises ValueError.
std::optional<int64_t> parse_python_int(std::string_view raw, int base) {
    std::string text = without_underscores(py_strip(raw, std::nullopt, StripSide::kBoth));
    bool negative = false;
    std::string_view digits = text;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
        negative = digits[0] == '-';
        digits.remove_prefix(1);
    }
    if (digits.size() > 2 && digits[0] == '0') {
        char p = static_cast<char>(digits[1] | 0x20);
        int prefixed = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
        if (prefixed != 0 && (base == 0 || base == prefixed)) {
            base = prefixed;
            digits.remove_prefix(2);
        }
    }
    if (base == 0) base = 10;
    if (digits.empty() || base < 2 || base > 36) return std::nullopt;
    uint64_t magnitude = 0;
    auto result = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
    if (result.ec != std::errc() || result.ptr != digits.data() + digits.size())
        return std::nullopt;
    if (magnitude > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    int64_t v = static_cast<int64_t>(magnitude);
    return negative ? -v : v;
}

// Python's float(text); nullopt where Python raises ValueError.
std::optional<double> parse_python_float(std::string_view raw) {
    std::string text = without_underscores(py_strip(raw, std::nullopt, StripSide::kBoth));
    std::string lower = lower_utf8(text);
    std::string_view body = lower;
    double sign = 1.0;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
        sign = body[0] == '-' ? -1.0 : 1.0;
        body.remove_prefix(1);
    }
    if (body == "inf" || body == "infinity") return sign * HUGE_VAL;
    if (body == "nan") return std::nan("");
    if (body.empty() || body[0] == '+' || body[0] == '-') return std::nullopt;
    double v = 0.0;
    auto result = std::from_chars(body.data(), body.data() + body.size(), v);
    if (result.ptr != body.data() + body.size()) return std::nullopt;
    if (result.ec == std::errc::result_out_of_range) v = HUGE_VAL;
    return sign * v;
}

std::optional<double> to_python_float(const Value& value) {
    if (value.is_number()) return value.as_double();
    if (value.is_string()) return parse_python_float(value.as_string());
    return std::nullopt;
}

Expected<Value> int_filter(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'int'", args, {"default", "base"}));
    Value fallback = bound.get_or(0, Value::integer(0));
    SE_ASSIGN_OR_RETURN(int64_t base, bound.get_int(1, 10));
    if (value.is_undefined()) return undefined_error(value);
    if (value.is_bool() || value.is_int()) return Value::integer(value.as_int());
    if (value.is_string()) {
        if (auto parsed = parse_python_int(value.as_string(), static_cast<int>(base))) {
            return Value::integer(*parsed);
        }
    }
    std::optional<double> real = to_python_float(value);
    if (!real) return fallback;
    if (!std::isfinite(*real))
        return invalid_argument("cannot convert float infinity or NaN to integer");
    return Value::integer(static_cast<int64_t>(std::trunc(*real)));
}

Expected<Value> float_filter(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'float'", args, {"default"}));
    if (value.is_undefined()) return undefined_error(value);
    std::optional<double> real = to_python_float(value);
    if (!real) return bound.get_or(0, Value::real(0.0));
    return Value::real(*real);
}

Expected<Value> abs_filter(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'abs'", args, {}));
    if (value.is_float()) return Value::real(std::fabs(value.as_double()));
    if (value.is_number()) {
        int64_t v = value.as_int();
        return Value::integer(v < 0 ? -v : v);
    }
    return invalid_argument("bad operand type for abs(): '" + std::string(value.type_name()) + "'");
}

// Python's round(x, ndigits) for floats: correctly rounded, ties to even.
double python_round(double x, int64_t ndigits) {
    if (!std::isfinite(x)) return x;
    if (ndigits >= 0) {
        if (ndigits > 300) return x;
        char buf[512];
        std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
        return std::strtod(buf, nullptr);
    }
    double scale = std::pow(10.0, static_cast<double>(-ndigits));
    return std::nearbyint(x / scale) * scale;
}

// Python's round(n, ndigits) for ints with ndigits < 0: exact, ties to even.
int64_t round_int(int64_t n, int64_t ndigits) {
    if (ndigits >= 0) return n;
    if (ndigits < -18) return 0;
    int64_t scale = 1;
    for (int64_t i = 0; i < -ndigits; ++i) scale *= 10;
    int64_t q = n / scale, r = n % scale;
    if (r < 0) {
        r += scale;
        --q;
    }
    if (2 * r > scale || (2 * r == scale && (q & 1))) ++q;
    return q * scale;
}

Expected<Value> round_filter(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'round'", args, {"precision", "method"}));
    SE_ASSIGN_OR_RETURN(int64_t precision, bound.get_int(0, 0));
    SE_ASSIGN_OR_RETURN(auto method_arg, bound.get_string(1));
    std::string method = method_arg.value_or("common");
    if (method != "common" && method != "ceil" && method != "floor") {
        return invalid_argument("filter 'round': method must be 'common', 'ceil' or 'floor'");
    }
    if (!value.is_number()) {
        return invalid_argument("filter 'round' needs a number, got " +
                                std::string(value.type_name()));
    }
    if (method == "common") {
        if (!value.is_float()) return Value::integer(round_int(value.as_int(), precision));
        return Value::real(python_round(value.as_double(), precision));
    }
    double scale = std::pow(10.0, static_cast<double>(precision));
    double scaled = value.as_double() * scale;
    return Value::real((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

constexpr FilterEntry kNumberFilters[] = {
    {"int", int_filter},
    {"float", float_filter},
    {"abs", abs_filter},
    {"round", round_filter},
};

}  // namespace

std::span<const FilterEntry> number_filters() {
    return kNumberFilters;
}

}  // namespace se::jinja
