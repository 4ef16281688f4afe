#include "tokenizer/chat_template/operators.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "tokenizer/chat_template/methods.h"
#include "tokenizer/chat_template/percent_format.h"
#include "tokenizer/chat_template/py_string.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

std::string_view op_symbol(BinaryOp op) {
    switch (op) {
        case BinaryOp::kAdd:
            return "+";
        case BinaryOp::kSub:
            return "-";
        case BinaryOp::kMul:
            return "*";
        case BinaryOp::kDiv:
            return "/";
        case BinaryOp::kFloorDiv:
            return "//";
        case BinaryOp::kMod:
            return "%";
        case BinaryOp::kPow:
            return "**";
        case BinaryOp::kConcat:
            return "~";
        case BinaryOp::kAnd:
            return "and";
        case BinaryOp::kOr:
            return "or";
    }
    return "?";
}

Status type_error(BinaryOp op, const Value& a, const Value& b) {
    return invalid_argument("unsupported operand type(s) for " + std::string(op_symbol(op)) +
                            ": '" + std::string(a.type_name()) + "' and '" +
                            std::string(b.type_name()) + "'");
}

// Python ints never overflow; ours are 64-bit, so a result that does not fit is an error.
Status int_overflow() {
    return out_of_range("integer result does not fit in 64 bits");
}

Expected<Value> float_arithmetic(BinaryOp op, double a, double b);

Expected<Value> int_arithmetic(BinaryOp op, int64_t a, int64_t b) {
    int64_t r = 0;
    switch (op) {
        case BinaryOp::kAdd:
            if (__builtin_add_overflow(a, b, &r)) return int_overflow();
            return Value::integer(r);
        case BinaryOp::kSub:
            if (__builtin_sub_overflow(a, b, &r)) return int_overflow();
            return Value::integer(r);
        case BinaryOp::kMul:
            if (__builtin_mul_overflow(a, b, &r)) return int_overflow();
            return Value::integer(r);
        case BinaryOp::kFloorDiv:
        case BinaryOp::kMod: {
            if (b == 0) return invalid_argument("integer division or modulo by zero");
            int64_t q = a / b, m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) {
                --q;
                m += b;
            }
            return Value::integer(op == BinaryOp::kMod ? m : q);
        }
        case BinaryOp::kPow: {
            if (b < 0) return float_arithmetic(op, static_cast<double>(a), static_cast<double>(b));
            // Squaring keeps this O(log b); once the base overflows so would the result.
            int64_t result = 1, base = a;
            for (int64_t e = b; e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return int_overflow();
                if (e > 1 && __builtin_mul_overflow(base, base, &base)) return int_overflow();
            }
            return Value::integer(result);
        }
        case BinaryOp::kDiv:
        case BinaryOp::kConcat:
        case BinaryOp::kAnd:
        case BinaryOp::kOr:
            break;
    }
    return internal_error("not an integer operator");
}

Expected<Value> float_arithmetic(BinaryOp op, double a, double b) {
    switch (op) {
        case BinaryOp::kAdd:
            return Value::real(a + b);
        case BinaryOp::kSub:
            return Value::real(a - b);
        case BinaryOp::kMul:
            return Value::real(a * b);
        case BinaryOp::kPow:
            if (a == 0.0 && b < 0)
                return invalid_argument("0.0 cannot be raised to a negative power");
            // Python would return a complex number.
            if (a < 0 && b != std::floor(b))
                return unsupported("complex result of ** not supported");
            return Value::real(std::pow(a, b));
        case BinaryOp::kDiv:
            if (b == 0.0) return invalid_argument("division by zero");
            return Value::real(a / b);
        case BinaryOp::kFloorDiv:
        case BinaryOp::kMod: {
            if (b == 0.0) return invalid_argument("float modulo or division by zero");
            // CPython's float_divmod, so results round the same way.
            double mod = std::fmod(a, b);
            double div = (a - mod) / b;
            if (mod != 0.0) {
                if ((b < 0) != (mod < 0)) {
                    mod += b;
                    div -= 1.0;
                }
            } else {
                mod = std::copysign(0.0, b);
            }
            if (op == BinaryOp::kMod) return Value::real(mod);
            if (div == 0.0) return Value::real(std::copysign(0.0, a / b));
            double floor_div = std::floor(div);
            if (div - floor_div > 0.5) floor_div += 1.0;
            return Value::real(floor_div);
        }
        case BinaryOp::kConcat:
        case BinaryOp::kAnd:
        case BinaryOp::kOr:
            break;
    }
    return internal_error("not a float operator");
}

Expected<Value> repeat(const Value& sequence, int64_t times) {
    int64_t unit = sequence.is_string() ? static_cast<int64_t>(sequence.as_string().size())
                                        : static_cast<int64_t>(sequence.as_list().size());
    if (times > 0 && unit > 0)
        SE_RETURN_IF_ERROR(
            check_built_size(times > kMaxBuiltString / unit ? kMaxBuiltString + 1 : unit * times));
    if (sequence.is_string()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
        return sequence.with_text(std::move(out));
    }
    ValueList items;
    for (int64_t i = 0; i < times; ++i) {
        items.insert(items.end(), sequence.as_list().begin(), sequence.as_list().end());
    }
    return sequence.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

// `format % args`; a Markup format escapes plain string arguments.
Expected<Value> string_format(const Value& format, const Value& args) {
    Value operand = args;
    if (format.is_markup()) {
        auto escaped = [](const Value& v) {
            return v.is_string() && !v.is_markup() ? Value::markup(html_escape(v.as_string())) : v;
        };
        if (args.is_tuple()) {
            ValueList items;
            for (const Value& item : args.as_list()) items.push_back(escaped(item));
            operand = Value::tuple(std::move(items));
        } else {
            operand = escaped(args);
        }
    }
    SE_ASSIGN_OR_RETURN(std::string text, percent_format(format.as_string(), operand));
    return format.with_text(std::move(text));
}

Expected<Value> sequence_arithmetic(BinaryOp op, const Value& a, const Value& b) {
    if (op == BinaryOp::kAdd && a.is_string() && b.is_string()) {
        if (!a.is_markup() && !b.is_markup()) return Value::string(a.as_string() + b.as_string());
        // Markup + str escapes the str (and str + Markup likewise).
        return Value::markup((a.is_markup() ? a.as_string() : html_escape(a.as_string())) +
                             (b.is_markup() ? b.as_string() : html_escape(b.as_string())));
    }
    if (op == BinaryOp::kAdd && a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        ValueList items = a.as_list();
        items.insert(items.end(), b.as_list().begin(), b.as_list().end());
        return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    if (op == BinaryOp::kMul) {
        bool a_seq = a.is_string() || a.is_list();
        bool b_seq = b.is_string() || b.is_list();
        if (a_seq && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
        if (b_seq && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    }
    if (op == BinaryOp::kAdd && a.is_string() && !b.is_string()) {
        return invalid_argument("can only concatenate str (not \"" + std::string(b.type_name()) +
                                "\") to str");
    }
    return type_error(op, a, b);
}

// How jinja2 names an object in "has no attribute" messages.
std::string describe(const Value& object) {
    if (object.is_none()) return "None";
    return fmt::format("{} object", object.type_name());
}

struct SliceRange {
    int64_t first = 0;
    int64_t last = 0;  // exclusive
    int64_t stride = 1;
};

// Python's slice.indices(): clamps start/stop for a sequence of `length`.
Expected<SliceRange> slice_indices(const Value& start, const Value& stop, const Value& step,
                                   int64_t length) {
    for (const Value* v : {&start, &stop, &step}) {
        if (!v->is_none() && !v->is_int() && !v->is_bool()) {
            if (v->is_undefined()) return undefined_error(*v);
            return invalid_argument("slice indices must be integers or None, got " +
                                    std::string(v->type_name()));
        }
    }
    SliceRange range;
    range.stride = step.is_none() ? 1 : step.as_int();
    if (range.stride == 0) return invalid_argument("slice step cannot be zero");
    const bool forward = range.stride > 0;
    auto clamp = [&](const Value& v, int64_t fallback) {
        if (v.is_none()) return fallback;
        int64_t i = v.as_int();
        if (i < 0) i += length;
        return std::clamp(i, forward ? int64_t{0} : int64_t{-1}, forward ? length : length - 1);
    };
    range.first = clamp(start, forward ? 0 : length - 1);
    range.last = clamp(stop, forward ? length : -1);
    return range;
}

}  // namespace

Status check_hashable(const Value& key) {
    if (key.is_dict() || (key.is_list() && !key.is_tuple())) {
        return invalid_argument(fmt::format("unhashable type: '{}'", key.type_name()));
    }
    if (key.is_tuple()) {
        for (const Value& item : key.as_list()) SE_RETURN_IF_ERROR(check_hashable(item));
    }
    return {};
}

Status undefined_error(const Value& value) {
    std::string reason = value.undefined_reason();
    return invalid_argument(reason.empty() ? "undefined value" : reason);
}

Expected<Value> binary_op(BinaryOp op, const Value& lhs, const Value& rhs) {
    if (op == BinaryOp::kConcat) return Value::string(to_str(lhs) + to_str(rhs));
    if (op == BinaryOp::kMod && lhs.is_string()) return string_format(lhs, rhs);
    if (lhs.is_undefined()) return undefined_error(lhs);
    if (rhs.is_undefined()) return undefined_error(rhs);
    if (lhs.is_number() && rhs.is_number()) {
        if (op == BinaryOp::kDiv || lhs.is_float() || rhs.is_float()) {
            return float_arithmetic(op, lhs.as_double(), rhs.as_double());
        }
        return int_arithmetic(op, lhs.as_int(), rhs.as_int());
    }
    return sequence_arithmetic(op, lhs, rhs);
}

Expected<Value> unary_op(UnaryOp op, const Value& operand) {
    switch (op) {
        case UnaryOp::kNot:
            return Value::boolean(!operand.truthy());
        case UnaryOp::kNeg:
        case UnaryOp::kPos:
            break;
    }
    if (operand.is_undefined()) return undefined_error(operand);
    if (!operand.is_number()) {
        return invalid_argument(std::string("bad operand type for unary ") +
                                (op == UnaryOp::kNeg ? "-" : "+") + ": '" +
                                std::string(operand.type_name()) + "'");
    }
    if (op == UnaryOp::kPos) return operand.is_bool() ? Value::integer(operand.as_int()) : operand;
    if (operand.is_float()) return Value::real(-operand.as_double());
    if (operand.as_int() == std::numeric_limits<int64_t>::min()) return int_overflow();
    return Value::integer(-operand.as_int());
}

Expected<bool> compare_op(CompareOp op, const Value& lhs, const Value& rhs) {
    switch (op) {
        case CompareOp::kEq:
            return values_equal(lhs, rhs);
        case CompareOp::kNe:
            return !values_equal(lhs, rhs);
        case CompareOp::kIn:
            return contains(rhs, lhs);
        case CompareOp::kNotIn: {
            SE_ASSIGN_OR_RETURN(bool found, contains(rhs, lhs));
            return !found;
        }
        case CompareOp::kLt:
        case CompareOp::kLe:
        case CompareOp::kGt:
        case CompareOp::kGe:
            break;
    }
    if (lhs.is_undefined()) return undefined_error(lhs);
    if (rhs.is_undefined()) return undefined_error(rhs);
    SE_ASSIGN_OR_RETURN(int c, compare_values(lhs, rhs));
    switch (op) {
        case CompareOp::kLt:
            return c < 0;
        case CompareOp::kLe:
            return c <= 0;
        case CompareOp::kGt:
            return c > 0;
        case CompareOp::kGe:
            return c >= 0;
        case CompareOp::kEq:
        case CompareOp::kNe:
        case CompareOp::kIn:
        case CompareOp::kNotIn:
            break;
    }
    return false;
}

Expected<bool> contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Value::Kind::kUndefined:
            return false;
        case Value::Kind::kString:
            if (!item.is_string()) {
                return invalid_argument("'in <string>' requires string as left operand, not " +
                                        std::string(item.type_name()));
            }
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Value::Kind::kList:
            for (const Value& v : container.as_list()) {
                if (values_equal(v, item)) return true;
            }
            return false;
        case Value::Kind::kDict:
            SE_RETURN_IF_ERROR(check_hashable(item));
            return container.as_dict().find(item) != nullptr;
        case Value::Kind::kNone:
        case Value::Kind::kBool:
        case Value::Kind::kInt:
        case Value::Kind::kFloat:
        case Value::Kind::kNamespace:
        case Value::Kind::kCallable:
            break;
    }
    return invalid_argument("argument of type '" + std::string(container.type_name()) +
                            "' is not iterable");
}

Expected<Value> get_attr(const Value& object, std::string_view name) {
    if (object.is_undefined()) return undefined_error(object);
    if (std::optional<Value> method = find_method(object, name)) return *method;
    if (object.is_dict()) {
        if (const Value* v = object.as_dict().find(name)) return *v;
    } else if (object.is_namespace()) {
        if (const Value* v = object.as_namespace().attrs.find(name)) return *v;
    }
    return Value::undefined(fmt::format("'{}' has no attribute '{}'", describe(object), name));
}

Expected<Value> get_item(const Value& object, const Value& key) {
    if (object.is_undefined()) return undefined_error(object);
    if (object.is_dict()) {
        if (const Value* v = object.as_dict().find(key)) return *v;
    } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
        bool is_string = object.is_string();
        int64_t length = is_string ? static_cast<int64_t>(utf8_length(object.as_string()))
                                   : static_cast<int64_t>(object.as_list().size());
        int64_t index = key.as_int() < 0 ? key.as_int() + length : key.as_int();
        if (index >= 0 && index < length) {
            if (!is_string) return object.as_list()[index];
            const std::string& s = object.as_string();
            size_t begin = utf8_offset(s, index);
            return object.with_text(s.substr(begin, utf8_offset(s, index + 1) - begin));
        }
        return Value::undefined(
            fmt::format("{} has no element {}", describe(object), key.as_int()));
    }
    if (key.is_string()) return get_attr(object, key.as_string());
    return Value::undefined(fmt::format("{} has no element {}", describe(object), to_repr(key)));
}

Expected<Value> get_slice(const Value& object, const Value& start, const Value& stop,
                          const Value& step) {
    if (object.is_undefined()) return undefined_error(object);
    // jinja2 compiles slices to plain Python subscripts, so these fail instead of going
    // undefined.
    if (object.is_dict()) return invalid_argument("unhashable type: 'slice'");
    if (!object.is_string() && !object.is_list()) {
        return invalid_argument(
            fmt::format("'{}' object is not subscriptable", object.type_name()));
    }
    std::u32string cps = object.is_string() ? utf8_decode(object.as_string()) : std::u32string();
    int64_t length = object.is_string() ? static_cast<int64_t>(cps.size())
                                        : static_cast<int64_t>(object.as_list().size());
    SE_ASSIGN_OR_RETURN(SliceRange range, slice_indices(start, stop, step, length));
    std::u32string chars;
    ValueList items;
    for (int64_t i = range.first; range.stride > 0 ? i < range.last : i > range.last;
         i += range.stride) {
        if (object.is_string()) {
            chars.push_back(cps[i]);
        } else {
            items.push_back(object.as_list()[i]);
        }
    }
    if (object.is_string()) return object.with_text(utf8_encode(chars));
    return object.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Expected<Value> get_attribute_path(const Value& item, std::string_view path) {
    Value current = item;
    size_t start = 0;
    while (start <= path.size()) {
        size_t dot = path.find('.', start);
        std::string part(
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        // jinja2 turns all-digit parts into indices.
        int64_t index = 0;
        auto parsed = std::from_chars(part.data(), part.data() + part.size(), index);
        bool is_index = !part.empty() && parsed.ec == std::errc() &&
                        parsed.ptr == part.data() + part.size() && part[0] != '-';
        Value key = is_index ? Value::integer(index) : Value::string(part);
        SE_ASSIGN_OR_RETURN(current, get_item(current, key));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return current;
}

Expected<ValueList> iterate(const Value& value) {
    switch (value.kind()) {
        case Value::Kind::kUndefined:
            return ValueList{};
        case Value::Kind::kList:
            return value.as_list();
        case Value::Kind::kDict: {
            ValueList keys;
            for (const auto& item : value.as_dict().items) keys.push_back(item.first);
            return keys;
        }
        case Value::Kind::kString: {
            ValueList chars;
            std::string piece;
            for (char32_t cp : utf8_decode(value.as_string())) {
                piece.clear();
                append_utf8(piece, cp);
                chars.push_back(Value::string(piece));
            }
            return chars;
        }
        case Value::Kind::kNone:
        case Value::Kind::kBool:
        case Value::Kind::kInt:
        case Value::Kind::kFloat:
        case Value::Kind::kNamespace:
        case Value::Kind::kCallable:
            break;
    }
    return invalid_argument(fmt::format("'{}' object is not iterable", value.type_name()));
}

}  // namespace se::jinja
