#include "server/json_body.h"

#include <fmt/core.h>

#include <cmath>
#include <limits>

namespace se::server {
namespace {

// Deepest nesting of arrays and objects, counted outside strings, stopping past `limit`
// (nlohmann's parser and destructor recurse; a hostile body must not reach them).
int nesting_depth(std::string_view text, int limit) {
    int depth = 0;
    int deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

std::string_view type_name(const nlohmann::json& v) {
    if (v.is_number_integer()) return "integer";
    if (v.is_number()) return "number";
    return v.type_name();
}

}  // namespace

std::optional<ApiError> parse_json_object(std::string_view body, nlohmann::json& out) {
    if (body.empty()) return bad_request("the request body is empty; expected a JSON object");
    if (nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
        return bad_request(
            fmt::format("the request body nests arrays or objects deeper than {}", kMaxJsonDepth));
    }
    try {
        out = nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception& e) {  // syntax, bad UTF-8, number overflow
        return bad_request(fmt::format("the request body is not valid JSON: {}", e.what()));
    }
    if (!out.is_object()) {
        return bad_request(
            fmt::format("the request body must be a JSON object, not {}", type_name(out)));
    }
    return std::nullopt;
}

std::optional<int64_t> json_integer(const nlohmann::json& value, int64_t lo, int64_t hi) {
    int64_t v = 0;
    if (value.is_number_unsigned()) {
        const uint64_t u = value.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        v = static_cast<int64_t>(u);
    } else if (value.is_number_integer()) {
        v = value.get<int64_t>();
    } else if (value.is_number_float()) {
        const double d = value.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) {
            return std::nullopt;
        }
        v = static_cast<int64_t>(d);
    } else {
        return std::nullopt;
    }
    if (v < lo || v > hi) return std::nullopt;
    return v;
}

FieldReader::FieldReader(const nlohmann::json& object, std::string prefix)
    : object_(object), prefix_(std::move(prefix)) {}

std::string FieldReader::name(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
}

const nlohmann::json* FieldReader::lookup(std::string_view key) {
    known_.emplace(key);
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
}

void FieldReader::fail(ApiError error) {
    if (!error_) error_ = std::move(error);
}

void FieldReader::wrong_type(std::string_view key, std::string_view expected) {
    fail(bad_request(fmt::format("'{}' must be {}, not {}", name(key), expected,
                                 type_name(object_.at(std::string(key)))),
                     name(key)));
}

void FieldReader::integer(std::string_view key, int64_t lo, int64_t hi,
                          std::optional<int64_t>& out) {
    const nlohmann::json* v = lookup(key);
    if (!v) return;
    if (!v->is_number()) return wrong_type(key, "an integer");
    auto value =
        json_integer(*v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (!value) return wrong_type(key, "an integer");
    if (*value < lo || *value > hi) {
        return fail(bad_request(
            fmt::format("'{}' must be in [{}, {}], got {}", name(key), lo, hi, *value), name(key)));
    }
    out = *value;
}

void FieldReader::number(std::string_view key, std::optional<double>& out) {
    const nlohmann::json* v = lookup(key);
    if (!v) return;
    if (!v->is_number()) return wrong_type(key, "a number");
    const double d = v->get<double>();
    if (!std::isfinite(d)) {
        return fail(bad_request(fmt::format("'{}' must be a finite number", name(key)), name(key)));
    }
    out = d;
}

void FieldReader::boolean(std::string_view key, std::optional<bool>& out) {
    const nlohmann::json* v = lookup(key);
    if (!v) return;
    if (!v->is_boolean()) return wrong_type(key, "a boolean");
    out = v->get<bool>();
}

void FieldReader::string(std::string_view key, std::optional<std::string>& out) {
    const nlohmann::json* v = lookup(key);
    if (!v) return;
    if (!v->is_string()) return wrong_type(key, "a string");
    out = v->get<std::string>();
}

void FieldReader::strings(std::string_view key, std::optional<std::vector<std::string>>& out) {
    const nlohmann::json* v = lookup(key);
    if (!v) return;
    if (v->is_string()) {
        out = std::vector<std::string>{v->get<std::string>()};
        return;
    }
    if (!v->is_array()) return wrong_type(key, "a string or a list of strings");
    std::vector<std::string> list;
    for (const auto& item : *v) {
        if (!item.is_string()) return wrong_type(key, "a string or a list of strings");
        list.push_back(item.get<std::string>());
    }
    out = std::move(list);
}

void FieldReader::integers(std::string_view key, int64_t lo, int64_t hi,
                           std::optional<std::vector<int64_t>>& out) {
    const nlohmann::json* v = lookup(key);
    if (!v) return;
    if (!v->is_array()) return wrong_type(key, "a list of integers");
    std::vector<int64_t> list;
    for (const auto& item : *v) {
        auto value = json_integer(item, lo, hi);
        if (!value) {
            return fail(bad_request(
                fmt::format("'{}' must hold integers in [{}, {}]", name(key), lo, hi), name(key)));
        }
        list.push_back(*value);
    }
    out = std::move(list);
}

const nlohmann::json* FieldReader::any(std::string_view key) {
    return lookup(key);
}

void FieldReader::ignore(std::string_view key) {
    known_.emplace(key);
}

std::optional<ApiError> FieldReader::finish() {
    if (error_) return error_;
    for (const auto& [key, value] : object_.items()) {
        if (known_.count(key) == 0) {
            return bad_request(fmt::format("unknown field '{}'", name(key)), name(key));
        }
    }
    return std::nullopt;
}

}  // namespace se::server
