#include "sparse/knobs.h"

#include <fmt/core.h>

#include "sparse/method_registry.h"

namespace se {

Expected<Knobs> Knobs::parse(std::string_view method, const nlohmann::json& knobs,
                             const std::vector<std::string>& known) {
    if (!knobs.is_object()) {
        return invalid_argument(
            fmt::format("--sparse-config: {} knobs must be a JSON object", method));
    }
    SE_RETURN_IF_ERROR(check_known_knobs(method, knobs, known));
    return Knobs(std::string(method), knobs);
}

bool Knobs::has(std::string_view name) const {
    return knobs_.contains(std::string(name));
}

Status Knobs::error(std::string_view name, std::string_view what) const {
    return invalid_argument(fmt::format("--sparse-config: {} knob '{}' {}", method_, name, what));
}

Expected<int32_t> Knobs::integer(std::string_view name, int32_t fallback, int32_t min,
                                 int32_t max) const {
    if (!has(name)) return fallback;
    const nlohmann::json& v = knobs_.at(std::string(name));
    const bool integral = v.is_number_integer() || v.is_number_unsigned();
    if (!integral || v.get<int64_t>() < min || v.get<int64_t>() > max) {
        return error(name,
                     fmt::format("must be an integer in [{}, {}], got {}", min, max, v.dump()));
    }
    return static_cast<int32_t>(v.get<int64_t>());
}

Expected<double> Knobs::number(std::string_view name, double fallback, double min,
                               double max) const {
    if (!has(name)) return fallback;
    const nlohmann::json& v = knobs_.at(std::string(name));
    if (!v.is_number() || v.get<double>() < min || v.get<double>() > max) {
        return error(name, fmt::format("must be a number in [{}, {}], got {}", min, max, v.dump()));
    }
    return v.get<double>();
}

Expected<bool> Knobs::boolean(std::string_view name, bool fallback) const {
    if (!has(name)) return fallback;
    const nlohmann::json& v = knobs_.at(std::string(name));
    if (!v.is_boolean()) return error(name, fmt::format("must be true or false, got {}", v.dump()));
    return v.get<bool>();
}

Expected<std::string> Knobs::choice(std::string_view name, std::string fallback,
                                    const std::vector<std::string>& options) const {
    if (!has(name)) return fallback;
    const nlohmann::json& v = knobs_.at(std::string(name));
    std::string list;
    for (const std::string& o : options) list += (list.empty() ? "" : ", ") + o;
    if (v.is_string()) {
        for (const std::string& o : options) {
            if (v.get<std::string>() == o) return o;
        }
    }
    return error(name, fmt::format("must be one of {}, got {}", list, v.dump()));
}

Expected<std::vector<int32_t>> Knobs::integers(std::string_view name, std::vector<int32_t> fallback,
                                               int32_t min, int32_t max) const {
    if (!has(name)) return fallback;
    const nlohmann::json& v = knobs_.at(std::string(name));
    std::vector<int32_t> out;
    bool valid = v.is_array();
    if (valid) {
        for (const nlohmann::json& x : v) {
            const bool integral = x.is_number_integer() || x.is_number_unsigned();
            if (!integral || x.get<int64_t>() < min || x.get<int64_t>() > max) {
                valid = false;
                break;
            }
            out.push_back(static_cast<int32_t>(x.get<int64_t>()));
        }
    }
    if (!valid) {
        return error(name, fmt::format("must be a list of integers in [{}, {}], got {}", min, max,
                                       v.dump()));
    }
    return out;
}

}  // namespace se
