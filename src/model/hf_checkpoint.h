// An HF model directory: config.json, safetensors weights (one file or shards listed in
// model.safetensors.index.json) and, when present, the tokenizer and generation files.
#pragma once

#include <string>

#include "core/expected.h"
#include "model/generation_config.h"
#include "model/hf_tokenizer_config.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace se {

struct HfCheckpoint {
    // eos_token_ids also holds generation_config.json's, so generation stops where HF's would.
    ModelConfig config;
    std::string tokenizer_json;          // text of tokenizer.json, empty when absent
    HfTokenizerConfig tokenizer_config;  // .json is null when tokenizer_config.json is absent
    std::string chat_template;           // chat_template.jinja, else tokenizer_config's
    GenerationDefaults generation;
};

// Everything but the weights. config.json is required; the other files are optional.
Expected<HfCheckpoint> read_hf_checkpoint(const std::string& dir);

// Maps model.safetensors, or every shard model.safetensors.index.json names (each must exist;
// a tensor in two shards, or missing from the shard the index names, is an error).
Expected<WeightStore> load_hf_weights(const std::string& dir);

}  // namespace se
