// One entry point for every model source: a GGUF file, an HF safetensors directory, or dummy
// weights from either one's config. The result is checked against what the architecture needs.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/expected.h"
#include "model/generation_config.h"
#include "model/model_config.h"
#include "model/weight_store.h"
#include "tokenizer/gguf_vocab.h"

namespace se {

struct LoadOptions {
    std::string model;                 // a .gguf file or an HF directory (see model_resolver.h)
    std::string load_format = "auto";  // auto | gguf | safetensors | dummy
    // auto | float32 | bfloat16 | float16 (also float, f32, bf16, half, f16): the dtype of the
    // float embedding and projection weights. Quantized GGUF weights never change; norm weights
    // and biases are always F32. auto keeps the file's types (dummy: bfloat16).
    std::string dtype = "auto";
    uint64_t seed = 0;                                          // of dummy weights
    std::function<void(float fraction)> on_progress = nullptr;  // fraction in [0, 1]
};

struct LoadedModel {
    ModelConfig config;
    WeightStore weights;
    std::optional<GgufVocab> gguf_vocab;   // GGUF sources
    std::string tokenizer_json;            // text of tokenizer.json; empty if none
    nlohmann::json tokenizer_config;       // tokenizer_config.json; null if none
    std::optional<std::string> bos_token;  // from tokenizer_config.json
    std::optional<std::string> eos_token;  // from tokenizer_config.json
    std::optional<bool> add_bos_token;     // from tokenizer_config.json
    std::string chat_template;             // empty if none
    GenerationDefaults generation;
    std::string source_path;
    std::string load_format;  // the one used: "gguf", "safetensors" or "dummy"
};

// Errors name the path, file, tensor or option at fault: not_found (no such model),
// invalid_argument (bad option), unsupported, data_loss.
Expected<LoadedModel> load_model(const LoadOptions& options);

}  // namespace se
