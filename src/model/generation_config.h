// Sampling defaults a checkpoint ships in generation_config.json. Request parameters override
// them; absent fields leave the engine's own defaults in force.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace se {

struct GenerationDefaults {
    std::vector<int32_t> eos_token_ids;  // empty when the file names none
    std::optional<bool> do_sample;
    std::optional<float> temperature;
    std::optional<float> top_p;
    std::optional<int32_t> top_k;
    std::optional<float> repetition_penalty;
};

// `source` names the file in error messages.
Expected<GenerationDefaults> parse_generation_config(std::string_view json_text,
                                                     const std::string& source);

}  // namespace se
