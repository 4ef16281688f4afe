// Reading a request body strictly, as the OpenAI API (and vLLM, which forbids extra fields)
// does: the body must be a JSON object no deeper than kMaxJsonDepth, every field must be one
// the endpoint knows, with the right type and a finite value. null means "not given".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "server/api_error.h"

namespace se::server {

inline constexpr int kMaxJsonDepth = 64;

// Parses `body` into an object; 400 naming the problem (syntax, depth, not an object).
std::optional<ApiError> parse_json_object(std::string_view body, nlohmann::json& out);

// Reads the fields of one object. Each getter names the field as known; a field that is
// absent or null leaves `out` unchanged. The first problem is kept and reported by finish(),
// which also refuses any field no getter named.
class FieldReader {
  public:
    // `object` must outlive the reader.
    explicit FieldReader(const nlohmann::json& object, std::string prefix = {});
    FieldReader(nlohmann::json&&, std::string = {}) = delete;

    void integer(std::string_view key, int64_t lo, int64_t hi, std::optional<int64_t>& out);
    void number(std::string_view key, std::optional<double>& out);
    void boolean(std::string_view key, std::optional<bool>& out);
    void string(std::string_view key, std::optional<std::string>& out);
    // A string or a list of strings (OpenAI's `stop`).
    void strings(std::string_view key, std::optional<std::vector<std::string>>& out);
    void integers(std::string_view key, int64_t lo, int64_t hi,
                  std::optional<std::vector<int64_t>>& out);
    // Any JSON value; nullptr when absent or null.
    const nlohmann::json* any(std::string_view key);
    // A known field whose value is not used.
    void ignore(std::string_view key);

    // Records a problem found by the caller (the first one wins).
    void fail(ApiError error);
    bool ok() const { return !error_.has_value(); }
    std::optional<ApiError> finish();

    // The field's full name ("stream_options.include_usage").
    std::string name(std::string_view key) const;

  private:
    const nlohmann::json* lookup(std::string_view key);
    void wrong_type(std::string_view key, std::string_view expected);

    const nlohmann::json& object_;
    std::string prefix_;
    std::set<std::string, std::less<>> known_;
    std::optional<ApiError> error_;
};

// One JSON integer in [lo, hi] (an integral float such as 5.0 counts); nullopt otherwise.
std::optional<int64_t> json_integer(const nlohmann::json& value, int64_t lo, int64_t hi);

}  // namespace se::server
