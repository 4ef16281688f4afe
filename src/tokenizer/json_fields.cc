#include "tokenizer/json_fields.h"

#include <limits>

namespace se::json_fields {

std::string join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
}

std::string index(std::string_view path, size_t i) {
    return std::string(path) + "[" + std::to_string(i) + "]";
}

const json* find(const json& obj, std::string_view key) {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

Expected<std::string> get_string(const json& obj, std::string_view key, std::string_view path) {
    const json* value = find(obj, key);
    if (value == nullptr) return invalid_argument(join(path, key) + " is missing");
    if (!value->is_string()) return invalid_argument(join(path, key) + " must be a string");
    return value->get<std::string>();
}

Expected<bool> get_bool(const json& obj, std::string_view key, std::string_view path,
                        bool default_value) {
    const json* value = find(obj, key);
    if (value == nullptr) return default_value;
    if (!value->is_boolean()) return invalid_argument(join(path, key) + " must be true or false");
    return value->get<bool>();
}

Expected<int32_t> to_int32(const json& value, std::string_view path) {
    if (!value.is_number_integer())
        return invalid_argument(std::string(path) + " must be an integer");
    const auto v = value.get<int64_t>();
    if (v < 0 || v > std::numeric_limits<int32_t>::max())
        return invalid_argument(std::string(path) + " = " + std::to_string(v) +
                                " is not a valid token id");
    return static_cast<int32_t>(v);
}

Expected<const json*> get_object(const json& obj, std::string_view key, std::string_view path) {
    const json* value = find(obj, key);
    if (value == nullptr) return invalid_argument(join(path, key) + " is missing");
    if (!value->is_object()) return invalid_argument(join(path, key) + " must be an object");
    return value;
}

Expected<const json*> get_array(const json& obj, std::string_view key, std::string_view path) {
    const json* value = find(obj, key);
    if (value == nullptr) return invalid_argument(join(path, key) + " is missing");
    if (!value->is_array()) return invalid_argument(join(path, key) + " must be an array");
    return value;
}

Expected<std::string> get_type(const json& component, std::string_view path) {
    if (!component.is_object()) return invalid_argument(std::string(path) + " must be an object");
    return get_string(component, "type", path);
}

Status unsupported_type(std::string_view path, std::string_view type, std::string_view supported) {
    return unsupported(std::string(path) + ".type '" + std::string(type) +
                       "' is not supported (supported: " + std::string(supported) + ")");
}

}  // namespace se::json_fields
