#include "model/json_fields.h"

#include <fmt/core.h>

#include <cmath>
#include <limits>

namespace se {
namespace {

// An integral JSON number as int64 (4096.0 counts: some tools write integers as floats).
std::optional<int64_t> as_int64(const nlohmann::json& v) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::trunc(d) == d && std::abs(d) < 9.0e18) return static_cast<int64_t>(d);
    }
    return std::nullopt;
}

std::optional<int32_t> as_i32(const nlohmann::json& v) {
    const std::optional<int64_t> i = as_int64(v);
    if (!i || *i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())
        return std::nullopt;
    return static_cast<int32_t>(*i);
}

}  // namespace

Expected<nlohmann::json> parse_json(std::string_view text, const std::string& source) {
    nlohmann::json parsed = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (parsed.is_discarded()) return data_loss(fmt::format("{}: not valid JSON", source));
    return parsed;
}

const nlohmann::json* JsonFields::find(std::string_view key) const {
    if (!object_.is_object()) return nullptr;
    auto it = object_.find(std::string(key));
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
}

Status JsonFields::type_error(std::string_view key, std::string_view expected) const {
    const nlohmann::json* v = find(key);
    return invalid_argument(fmt::format("{}: field '{}' must be {}, got {}", source_,
                                        field_name(key), expected,
                                        v != nullptr ? v->type_name() : "null"));
}

Expected<std::optional<int64_t>> JsonFields::find_int(std::string_view key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::optional<int64_t>();
    const std::optional<int64_t> i = as_int64(*v);
    if (!i) return type_error(key, "an integer");
    return i;
}

Expected<std::optional<int32_t>> JsonFields::find_i32(std::string_view key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::optional<int32_t>();
    const std::optional<int32_t> i = as_i32(*v);
    if (!i) return type_error(key, "a 32-bit integer");
    return i;
}

Expected<int32_t> JsonFields::require_i32(std::string_view key) const {
    SE_ASSIGN_OR_RETURN(const std::optional<int32_t> v, find_i32(key));
    if (!v) return not_found(fmt::format("{}: field '{}' is missing", source_, field_name(key)));
    return *v;
}

Expected<std::optional<double>> JsonFields::find_number(std::string_view key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::optional<double>();
    if (!v->is_number()) return type_error(key, "a number");
    return std::optional<double>(v->get<double>());
}

Expected<std::optional<bool>> JsonFields::find_bool(std::string_view key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::optional<bool>();
    if (!v->is_boolean()) return type_error(key, "true or false");
    return std::optional<bool>(v->get<bool>());
}

Expected<std::optional<std::string>> JsonFields::find_string(std::string_view key) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return std::optional<std::string>();
    if (!v->is_string()) return type_error(key, "a string");
    return std::optional<std::string>(v->get<std::string>());
}

Expected<std::vector<int32_t>> JsonFields::find_i32_list(std::string_view key) const {
    const nlohmann::json* v = find(key);
    std::vector<int32_t> out;
    if (v == nullptr) return out;
    if (const std::optional<int32_t> single = as_i32(*v)) {
        out.push_back(*single);
        return out;
    }
    if (!v->is_array()) return type_error(key, "an integer or a list of integers");
    for (const nlohmann::json& item : *v) {
        const std::optional<int32_t> i = as_i32(item);
        if (!i) return type_error(key, "an integer or a list of integers");
        out.push_back(*i);
    }
    return out;
}

Expected<const nlohmann::json*> JsonFields::find_object(std::string_view key) const {
    const nlohmann::json* v = find(key);
    if (v != nullptr && !v->is_object()) return type_error(key, "an object");
    return v;
}

}  // namespace se
