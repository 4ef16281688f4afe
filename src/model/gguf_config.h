// What a GGUF file's metadata says about the model besides its weights: the ModelConfig, the
// tokenizer (tokenizer.ggml.*) and the chat template.
#pragma once

#include <optional>

#include "core/expected.h"
#include "model/gguf_file.h"
#include "model/model_config.h"
#include "tokenizer/gguf_vocab.h"

namespace se {

// Reads {arch}.* keys for general.architecture in {llama, qwen2, qwen3}; anything else is
// unsupported, naming the architecture. Tensors complete the picture: no output.weight means
// tied embeddings, rope_freqs.weight (Llama 3.1) becomes rope_freq_factors.
Expected<ModelConfig> gguf_model_config(const GgufFile& file);

// nullopt when the file carries no tokenizer.ggml.tokens. Token ids must lie inside the vocab.
Expected<std::optional<GgufVocab>> gguf_vocab(const GgufFile& file);

}  // namespace se
