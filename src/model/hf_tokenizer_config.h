// The parts of an HF tokenizer_config.json the engine reads, plus the whole parsed file for the
// tokenizer to consult (added_tokens_decoder and the like).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace se {

struct HfTokenizerConfig {
    nlohmann::json json;        // the whole file
    std::string chat_template;  // empty when absent
    std::optional<std::string> bos_token;
    std::optional<std::string> eos_token;
    std::optional<bool> add_bos_token;
};

// chat_template may be a string or a list of {name, template} (the one named "default" is
// taken); bos_token/eos_token a string or an AddedToken object {content: ...}.
Expected<HfTokenizerConfig> parse_tokenizer_config(std::string_view json_text,
                                                   const std::string& source);

}  // namespace se
