#include "tokenizer/chat_template/value.h"

#include <algorithm>
#include <cmath>

namespace se::jinja {

const Value* DictData::find(const Value& key) const {
    for (const auto& [k, v] : items) {
        if (values_equal(k, key)) return &v;
    }
    return nullptr;
}

const Value* DictData::find(std::string_view key) const {
    for (const auto& [k, v] : items) {
        if (k.is_string() && k.as_string() == key) return &v;
    }
    return nullptr;
}

void DictData::set(Value key, Value value) {
    for (auto& [k, v] : items) {
        if (values_equal(k, key)) {
            v = std::move(value);
            return;
        }
    }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::list(ValueList items) {
    return Value(std::make_shared<const ListData>(ListData{std::move(items), false}));
}

Value Value::tuple(ValueList items) {
    return Value(std::make_shared<const ListData>(ListData{std::move(items), true}));
}

Value Value::dict(DictData dict) {
    return Value(std::make_shared<const DictData>(std::move(dict)));
}

Value Value::make_namespace(DictData attrs) {
    return Value(std::make_shared<NamespaceData>(NamespaceData{std::move(attrs)}));
}

Value Value::callable(std::string name, NativeFunction fn) {
    return Value(
        std::make_shared<const CallableData>(CallableData{std::move(name), std::move(fn)}));
}

Value Value::from_json(const nlohmann::ordered_json& json) {
    using Type = nlohmann::ordered_json::value_t;
    switch (json.type()) {
        case Type::null:
        case Type::discarded:
            return none();
        case Type::boolean:
            return boolean(json.get<bool>());
        case Type::number_integer:
            return integer(json.get<int64_t>());
        case Type::number_unsigned:
            // Beyond int64 a Python int would still be exact; a double is the closest we keep.
            if (json.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
                return real(static_cast<double>(json.get<uint64_t>()));
            }
            return integer(static_cast<int64_t>(json.get<uint64_t>()));
        case Type::number_float:
            return real(json.get<double>());
        case Type::string:
            return string(json.get<std::string>());
        case Type::binary:
            return string(std::string(json.get_binary().begin(), json.get_binary().end()));
        case Type::array: {
            ValueList items;
            items.reserve(json.size());
            for (const auto& item : json) items.push_back(from_json(item));
            return list(std::move(items));
        }
        case Type::object: {
            DictData dict;
            dict.items.reserve(json.size());
            for (const auto& [key, item] : json.items()) {
                dict.items.emplace_back(string(key), from_json(item));
            }
            return Value::dict(std::move(dict));
        }
    }
    return none();
}

int64_t Value::as_int() const {
    if (is_bool()) return as_bool() ? 1 : 0;
    return std::get<int64_t>(data_);
}

double Value::as_double() const {
    if (is_float()) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

bool Value::truthy() const {
    switch (kind()) {
        case Kind::kUndefined:
        case Kind::kNone:
            return false;
        case Kind::kBool:
            return as_bool();
        case Kind::kInt:
            return as_int() != 0;
        case Kind::kFloat:
            return as_double() != 0.0;
        case Kind::kString:
            return !as_string().empty();
        case Kind::kList:
            return !as_list().empty();
        case Kind::kDict:
            return !as_dict().items.empty();
        case Kind::kNamespace:
        case Kind::kCallable:
            return true;
    }
    return false;
}

std::string_view Value::type_name() const {
    switch (kind()) {
        case Kind::kUndefined:
            return "Undefined";
        case Kind::kNone:
            return "NoneType";
        case Kind::kBool:
            return "bool";
        case Kind::kInt:
            return "int";
        case Kind::kFloat:
            return "float";
        case Kind::kString:
            return "str";
        case Kind::kList:
            return is_tuple() ? "tuple" : "list";
        case Kind::kDict:
            return "dict";
        case Kind::kNamespace:
            return "Namespace";
        case Kind::kCallable:
            return "function";
    }
    return "object";
}

bool Value::same_object(const Value& other) const {
    if (kind() != other.kind()) return false;
    switch (kind()) {
        case Kind::kList:
            return &as_list() == &other.as_list();
        case Kind::kDict:
            return &as_dict() == &other.as_dict();
        case Kind::kNamespace:
            return &as_namespace() == &other.as_namespace();
        case Kind::kCallable:
            return &as_callable() == &other.as_callable();
        case Kind::kUndefined:
        case Kind::kNone:
            return true;
        case Kind::kBool:
        case Kind::kInt:
        case Kind::kFloat:
        case Kind::kString:
            return values_equal(*this, other);
    }
    return false;
}

namespace {

bool dicts_equal(const DictData& a, const DictData& b) {
    if (a.items.size() != b.items.size()) return false;
    for (const auto& [key, value] : a.items) {
        const Value* other = b.find(key);
        if (other == nullptr || !values_equal(value, *other)) return false;
    }
    return true;
}

bool lists_equal(const Value& a, const Value& b) {
    if (a.is_tuple() != b.is_tuple()) return false;
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), values_equal);
}

}  // namespace

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::kUndefined:
        case Value::Kind::kNone:
            return true;
        case Value::Kind::kString:
            return a.as_string() == b.as_string();
        case Value::Kind::kList:
            return lists_equal(a, b);
        case Value::Kind::kDict:
            return dicts_equal(a.as_dict(), b.as_dict());
        case Value::Kind::kNamespace:
        case Value::Kind::kCallable:
            return a.same_object(b);
        case Value::Kind::kBool:
        case Value::Kind::kInt:
        case Value::Kind::kFloat:
            break;  // handled as numbers above
    }
    return false;
}

Expected<int> compare_values(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            double x = a.as_double(), y = b.as_double();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const ValueList& x = a.as_list();
        const ValueList& y = b.as_list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_equal(x[i], y[i])) continue;
            return compare_values(x[i], y[i]);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    return invalid_argument("ordering not supported between instances of '" +
                            std::string(a.type_name()) + "' and '" + std::string(b.type_name()) +
                            "'");
}

}  // namespace se::jinja
