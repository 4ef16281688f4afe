// Typed reading of a method's knobs (--sparse-config), with errors that name the method and the
// knob: "--sparse-config: <method> knob 'window' must be an integer in [1, 4096], got -3".
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace se {

class Knobs {
  public:
    // Fails (naming the knob) when `knobs` has one not in `known`.
    static Expected<Knobs> parse(std::string_view method, const nlohmann::json& knobs,
                                 const std::vector<std::string>& known);

    bool has(std::string_view name) const;
    Expected<int32_t> integer(std::string_view name, int32_t fallback, int32_t min,
                              int32_t max = std::numeric_limits<int32_t>::max()) const;
    Expected<double> number(std::string_view name, double fallback, double min, double max) const;
    Expected<bool> boolean(std::string_view name, bool fallback) const;
    Expected<std::string> choice(std::string_view name, std::string fallback,
                                 const std::vector<std::string>& options) const;
    // A list of integers, each in [min, max].
    Expected<std::vector<int32_t>> integers(std::string_view name, std::vector<int32_t> fallback,
                                            int32_t min, int32_t max) const;

    // invalid_argument("--sparse-config: <method> knob '<name>' <what>").
    Status error(std::string_view name, std::string_view what) const;

  private:
    Knobs(std::string method, nlohmann::json knobs)
        : method_(std::move(method)), knobs_(std::move(knobs)) {}

    std::string method_;
    nlohmann::json knobs_;
};

}  // namespace se
