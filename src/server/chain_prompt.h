// The prompt of a chat turn that continues a chain with `chain_append_start: k`: messages[:k]
// are what the chain holds already, so they are not rendered again (a template may render the
// model's reply differently from the tokens it produced). The prompt is the chain's last turn
// (its prompt and every generated token) followed by
//
//   the end-of-turn text the template writes after messages[k-1]'s content, minus what the
//   reply already ended with (the EOS token's text, say)
//   + what rendering messages[k:] after messages[:k] adds (with the generation prompt)
//
//   SmolLM2, reply ended on <|im_end|>:  ... reply<|im_end|>  +  "\n"  +  "<|im_start|>user\n..."
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace se::server {

Expected<std::vector<int32_t>> chain_prompt(const Engine& engine,
                                            std::span<const int32_t> transcript,
                                            const nlohmann::ordered_json& messages,
                                            int32_t append_start,
                                            const nlohmann::ordered_json& template_kwargs);

}  // namespace se::server
