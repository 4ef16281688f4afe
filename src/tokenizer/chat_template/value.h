// Value: a Python object as a chat template sees it. Lists, tuples and dicts are immutable (the
// sandbox transformers uses rejects list.append and friends), so they are shared, not copied;
// a namespace is the one mutable object and is shared by reference like in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/expected.h"

namespace se::jinja {

class Value;
using ValueList = std::vector<Value>;

struct ListData {
    ValueList items;
    bool is_tuple = false;
};

// Insertion-ordered like a Python dict; chat dicts are small, so lookups are linear.
struct DictData {
    std::vector<std::pair<Value, Value>> items;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    // Replaces the value of an existing key, else appends.
    void set(Value key, Value value);
};

struct NamespaceData {
    DictData attrs;  // string keys only
};

struct CallArgs {
    ValueList positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Expected<Value>(const CallArgs& args)>;

struct CallableData {
    std::string name;
    NativeFunction fn;
};

// Using an undefined value in most operations is an error; `reason` is that error's message,
// e.g. "'foo' is undefined" or "'dict object' has no attribute 'content'".
struct Undefined {
    std::string reason;
};

struct NoneValue {};

// A str, or a markupsafe Markup (`|safe`, `|escape`): adding plain text to a Markup
// HTML-escapes that text, which some templates rely on.
struct StringValue {
    std::string text;
    bool markup = false;
};

class Value {
  public:
    enum class Kind {
        kUndefined,
        kNone,
        kBool,
        kInt,
        kFloat,
        kString,
        kList,  // list or tuple
        kDict,
        kNamespace,
        kCallable,
    };

    Value() : data_(Undefined{}) {}
    static Value undefined(std::string reason) { return Value(Undefined{std::move(reason)}); }
    static Value none() { return Value(NoneValue{}); }
    static Value boolean(bool b) { return Value(b); }
    static Value integer(int64_t i) { return Value(i); }
    static Value real(double d) { return Value(d); }
    static Value string(std::string s) { return Value(StringValue{std::move(s), false}); }
    static Value markup(std::string s) { return Value(StringValue{std::move(s), true}); }
    // A string with `text` that keeps this string's markup flag.
    Value with_text(std::string text) const {
        return Value(StringValue{std::move(text), is_markup()});
    }
    static Value list(ValueList items);
    static Value tuple(ValueList items);
    static Value dict(DictData dict);
    static Value make_namespace(DictData attrs);
    static Value callable(std::string name, NativeFunction fn);
    static Value from_json(const nlohmann::ordered_json& json);

    Kind kind() const { return static_cast<Kind>(data_.index()); }
    bool is_undefined() const { return kind() == Kind::kUndefined; }
    bool is_none() const { return kind() == Kind::kNone; }
    bool is_bool() const { return kind() == Kind::kBool; }
    bool is_int() const { return kind() == Kind::kInt; }
    bool is_float() const { return kind() == Kind::kFloat; }
    // Python numbers: bool is an int subclass.
    bool is_number() const { return is_bool() || is_int() || is_float(); }
    bool is_string() const { return kind() == Kind::kString; }
    bool is_markup() const { return is_string() && std::get<StringValue>(data_).markup; }
    bool is_list() const { return kind() == Kind::kList; }
    bool is_tuple() const { return is_list() && list_data().is_tuple; }
    bool is_dict() const { return kind() == Kind::kDict; }
    bool is_namespace() const { return kind() == Kind::kNamespace; }
    bool is_callable() const { return kind() == Kind::kCallable; }

    bool as_bool() const { return std::get<bool>(data_); }
    // Valid for bool and int.
    int64_t as_int() const;
    // Valid for any number.
    double as_double() const;
    const std::string& as_string() const { return std::get<StringValue>(data_).text; }
    const ValueList& as_list() const { return list_data().items; }
    const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(data_); }
    NamespaceData& as_namespace() const { return *std::get<std::shared_ptr<NamespaceData>>(data_); }
    const CallableData& as_callable() const {
        return *std::get<std::shared_ptr<const CallableData>>(data_);
    }
    const std::string& undefined_reason() const { return std::get<Undefined>(data_).reason; }

    // Python truthiness (undefined is false).
    bool truthy() const;
    // Python's type name, for error messages: "int", "str", "dict", ...
    std::string_view type_name() const;
    // Whether the two values are the same object (Python `is`), for shared kinds.
    bool same_object(const Value& other) const;

  private:
    using Data = std::variant<Undefined, NoneValue, bool, int64_t, double, StringValue,
                              std::shared_ptr<const ListData>, std::shared_ptr<const DictData>,
                              std::shared_ptr<NamespaceData>, std::shared_ptr<const CallableData>>;
    template <typename T>
    explicit Value(T data) : data_(std::move(data)) {}

    const ListData& list_data() const { return *std::get<std::shared_ptr<const ListData>>(data_); }

    Data data_;
};

// Python ==.
bool values_equal(const Value& a, const Value& b);
// Python ordering (<0, 0, >0); an error names both types when Python would raise TypeError.
Expected<int> compare_values(const Value& a, const Value& b);

}  // namespace se::jinja
