// Loads a GGUF model: config and tokenizer from the metadata, weights as zero-copy views of the
// file mapping under HF tensor names.
#pragma once

#include <optional>
#include <string>

#include "core/expected.h"
#include "model/model_config.h"
#include "model/weight_store.h"
#include "tokenizer/gguf_vocab.h"

namespace se {

struct GgufModel {
    ModelConfig config;
    std::optional<GgufVocab> vocab;  // nullopt when the file has no tokenizer.ggml.tokens
    std::string chat_template;       // tokenizer.chat_template, empty when absent
    WeightStore weights;             // owns the file mapping
};

// Every tensor must map to an HF name of the architecture (rope_freqs.weight goes into the
// config instead); an unknown tensor is unsupported rather than silently ignored, as llama.cpp
// does, because an unused tensor means the file describes a model this engine would run wrong.
Expected<GgufModel> load_gguf_model(const std::string& path);

// Only the config, vocab and chat template (weights stay empty): for --load-format dummy.
Expected<GgufModel> load_gguf_metadata(const std::string& path);

}  // namespace se
