// An HF transformers config.json read into a ModelConfig.
#pragma once

#include <string>
#include <string_view>

#include "core/expected.h"
#include "model/model_config.h"

namespace se {

// architectures[0] must be LlamaForCausalLM, Qwen2ForCausalLM or Qwen3ForCausalLM. Every field
// of the wrong type, and every unsupported setting (rope type, activation, sliding window), is an
// error naming the field. `source` names the file in messages.
Expected<ModelConfig> parse_hf_config(std::string_view json_text, const std::string& source);

}  // namespace se
