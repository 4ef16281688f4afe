#include "tokenizer/chat_template/test_predicates.h"

#include <cmath>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

using Kind = Value::Kind;

bool is_defined(const Value& v) {
    return !v.is_undefined();
}
bool is_undefined(const Value& v) {
    return v.is_undefined();
}
bool is_none(const Value& v) {
    return v.is_none();
}
bool is_boolean(const Value& v) {
    return v.is_bool();
}
bool is_false(const Value& v) {
    return v.is_bool() && !v.as_bool();
}
bool is_true(const Value& v) {
    return v.is_bool() && v.as_bool();
}
bool is_integer(const Value& v) {
    return v.is_int();
}
bool is_float(const Value& v) {
    return v.is_float();
}
bool is_number(const Value& v) {
    return v.is_number();
}
bool is_string(const Value& v) {
    return v.is_string();
}
bool is_mapping(const Value& v) {
    return v.is_dict();
}
bool is_escaped(const Value&) {
    return false;
}  // no Markup strings: autoescape is off
// jinja2's Undefined has __len__, __getitem__, __iter__ and __call__, so it passes these.
bool is_sequence(const Value& v) {
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool is_iterable(const Value& v) {
    return is_sequence(v);
}
bool is_callable(const Value& v) {
    return v.is_callable() || v.is_undefined();
}

bool is_lower_text(const Value& v) {
    bool cased = false;
    for (char32_t cp : utf8_decode(to_str(v))) {
        if (is_upper(cp)) return false;
        cased = cased || is_lower(cp);
    }
    return cased;
}

bool is_upper_text(const Value& v) {
    bool cased = false;
    for (char32_t cp : utf8_decode(to_str(v))) {
        if (is_lower(cp)) return false;
        cased = cased || is_upper(cp);
    }
    return cased;
}

template <bool (*kPredicate)(const Value&)>
Expected<bool> unary_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("test", args, {}));
    return kPredicate(value);
}

template <CompareOp kOp>
Expected<bool> compare_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("comparison test", args, {"other"}, 1));
    return compare_op(kOp, value, bound.get(0));
}

Expected<bool> in_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("test 'in'", args, {"seq"}, 1));
    return contains(bound.get(0), value);
}

Expected<bool> sameas_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("test 'sameas'", args, {"other"}, 1));
    return value.same_object(bound.get(0));
}

Expected<bool> divisible(const Value& value, const Value& divisor, int64_t remainder) {
    SE_ASSIGN_OR_RETURN(Value mod, binary_op(BinaryOp::kMod, value, divisor));
    return values_equal(mod, Value::integer(remainder));
}

Expected<bool> odd_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("test 'odd'", args, {}));
    return divisible(value, Value::integer(2), 1);
}

Expected<bool> even_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("test 'even'", args, {}));
    return divisible(value, Value::integer(2), 0);
}

Expected<bool> divisibleby_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("test 'divisibleby'", args, {"num"}, 1));
    return divisible(value, bound.get(0), 0);
}

Expected<bool> filter_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("test 'filter'", args, {}));
    return value.is_string() && find_filter(value.as_string()) != nullptr;
}

Expected<bool> test_test(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("test 'test'", args, {}));
    return value.is_string() && find_test(value.as_string()) != nullptr;
}

struct TestEntry {
    std::string_view name;
    TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"defined", unary_test<is_defined>},
    {"undefined", unary_test<is_undefined>},
    {"none", unary_test<is_none>},
    {"boolean", unary_test<is_boolean>},
    {"false", unary_test<is_false>},
    {"true", unary_test<is_true>},
    {"integer", unary_test<is_integer>},
    {"float", unary_test<is_float>},
    {"number", unary_test<is_number>},
    {"string", unary_test<is_string>},
    {"mapping", unary_test<is_mapping>},
    {"sequence", unary_test<is_sequence>},
    {"iterable", unary_test<is_iterable>},
    {"callable", unary_test<is_callable>},
    {"escaped", unary_test<is_escaped>},
    {"lower", unary_test<is_lower_text>},
    {"upper", unary_test<is_upper_text>},
    {"odd", odd_test},
    {"even", even_test},
    {"divisibleby", divisibleby_test},
    {"in", in_test},
    {"sameas", sameas_test},
    {"filter", filter_test},
    {"test", test_test},
    {"eq", compare_test<CompareOp::kEq>},
    {"equalto", compare_test<CompareOp::kEq>},
    {"==", compare_test<CompareOp::kEq>},
    {"ne", compare_test<CompareOp::kNe>},
    {"!=", compare_test<CompareOp::kNe>},
    {"lt", compare_test<CompareOp::kLt>},
    {"lessthan", compare_test<CompareOp::kLt>},
    {"<", compare_test<CompareOp::kLt>},
    {"le", compare_test<CompareOp::kLe>},
    {"<=", compare_test<CompareOp::kLe>},
    {"gt", compare_test<CompareOp::kGt>},
    {"greaterthan", compare_test<CompareOp::kGt>},
    {">", compare_test<CompareOp::kGt>},
    {"ge", compare_test<CompareOp::kGe>},
    {">=", compare_test<CompareOp::kGe>},
};

}  // namespace

TestFn find_test(std::string_view name) {
    for (const TestEntry& entry : kTests) {
        if (entry.name == name) return entry.fn;
    }
    return nullptr;
}

}  // namespace se::jinja
