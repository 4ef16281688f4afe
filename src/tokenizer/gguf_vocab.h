// The tokenizer a GGUF file carries (keys tokenizer.ggml.*), as plain data. The GGUF loader
// fills it; Tokenizer::from_gguf builds a tokenizer from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace se {

// tokenizer.ggml.token_type values
enum class GgufTokenType : int32_t {
    kUndefined = 0,
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

struct GgufVocab {
    std::string model;                 // tokenizer.ggml.model, e.g. "gpt2"
    std::string pre;                   // tokenizer.ggml.pre, e.g. "smollm", "llama-bpe", "qwen2"
    std::vector<std::string> tokens;   // tokenizer.ggml.tokens (byte-level encoded strings)
    std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (GgufTokenType), may be empty
    std::vector<std::string> merges;   // tokenizer.ggml.merges, each "left right"
    std::optional<int32_t> bos_id;     // tokenizer.ggml.bos_token_id
    std::optional<int32_t> eos_id;     // tokenizer.ggml.eos_token_id
    std::optional<int32_t> eot_id;     // tokenizer.ggml.eot_token_id
    std::optional<int32_t> unk_id;     // tokenizer.ggml.unknown_token_id
    std::optional<int32_t> pad_id;     // tokenizer.ggml.padding_token_id
    bool add_bos = false;              // tokenizer.ggml.add_bos_token
    bool add_eos = false;              // tokenizer.ggml.add_eos_token
};

}  // namespace se
