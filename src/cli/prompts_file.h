// `generate --prompts-file`: one JSON object per line, each a request of one batch.
//   {"prompt": "text"}  |  {"prompt_token_ids": [1, 2, 3]}  |  {"messages": [{"role": ..., ...}]}
// Optional per line: "max_tokens", "temperature", "top_p", "top_k", "seed", "ignore_eos".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "engine/sampling/sampling_params.h"

namespace se::cli {

struct PromptLine {
    std::optional<std::string> prompt;
    std::optional<std::vector<int32_t>> prompt_token_ids;
    std::optional<nlohmann::ordered_json> messages;
    SamplingParams params;  // the command's flags with this line's overrides
};

// Errors name the file, the line number and the field.
Expected<std::vector<PromptLine>> read_prompts_file(const std::string& path,
                                                    const SamplingParams& defaults);

}  // namespace se::cli
