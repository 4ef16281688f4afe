// Typed access to tokenizer.json fields. Every error names the field by its JSON path, e.g.
// "model.merges[12]", so a user can find what is wrong in their file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/expected.h"

namespace se::json_fields {

using nlohmann::json;

std::string join(std::string_view path, std::string_view key);
std::string index(std::string_view path, size_t i);

// The member `key` of `obj`, or nullptr when absent or null.
const json* find(const json& obj, std::string_view key);

Expected<std::string> get_string(const json& obj, std::string_view key, std::string_view path);
Expected<bool> get_bool(const json& obj, std::string_view key, std::string_view path,
                        bool default_value);
Expected<int32_t> to_int32(const json& value, std::string_view path);
Expected<const json*> get_object(const json& obj, std::string_view key, std::string_view path);
Expected<const json*> get_array(const json& obj, std::string_view key, std::string_view path);

// The "type" member of a component object.
Expected<std::string> get_type(const json& component, std::string_view path);

Status unsupported_type(std::string_view path, std::string_view type, std::string_view supported);

}  // namespace se::json_fields
