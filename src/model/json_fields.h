// Typed, non-throwing access to the fields of a JSON object from a config file. Every error
// names the file and the field, so a malformed config.json gives a Status, never an exception.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace se {

// Parses `text` without exceptions; data_loss naming `source` when it is not JSON.
Expected<nlohmann::json> parse_json(std::string_view text, const std::string& source);

class JsonFields {
  public:
    // `source` names the file in messages; `prefix` the enclosing object ("rope_scaling.").
    JsonFields(const nlohmann::json& object, std::string source, std::string prefix = "")
        : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}

    // nullptr when the field is absent or null: both mean "not set" in HF configs.
    const nlohmann::json* find(std::string_view key) const;

    // find_* give nullopt for an absent or null field and fail when it has another type;
    // require_* also fail when it is absent.
    Expected<std::optional<int64_t>> find_int(std::string_view key) const;
    Expected<std::optional<int32_t>> find_i32(std::string_view key) const;
    Expected<int32_t> require_i32(std::string_view key) const;
    Expected<std::optional<double>> find_number(std::string_view key) const;
    Expected<std::optional<bool>> find_bool(std::string_view key) const;
    Expected<std::optional<std::string>> find_string(std::string_view key) const;
    // A single int or a list of ints (eos_token_id); empty when absent.
    Expected<std::vector<int32_t>> find_i32_list(std::string_view key) const;
    // nullptr when absent or null; fails when the field is not an object.
    Expected<const nlohmann::json*> find_object(std::string_view key) const;

    // "<source>: field '<prefix><key>' must be <expected>, got <json type>".
    Status type_error(std::string_view key, std::string_view expected) const;
    const std::string& source() const { return source_; }
    std::string field_name(std::string_view key) const { return prefix_ + std::string(key); }

  private:
    const nlohmann::json& object_;
    std::string source_;
    std::string prefix_;
};

}  // namespace se
