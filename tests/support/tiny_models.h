// Test-only: complete tiny models (2 layers, hidden 64) as GGUF files and HF directories.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "support/gguf_writer.h"
#include "support/safetensors_writer.h"

namespace se::testing {

inline constexpr int kTinyHidden = 64;
inline constexpr int kTinyHeads = 4;
inline constexpr int kTinyKvHeads = 2;
inline constexpr int kTinyHeadDim = 16;
inline constexpr int kTinyInter = 128;
inline constexpr int kTinyLayers = 2;
inline constexpr int kTinyVocab = 32;

struct TinyGgufOptions {
    std::string arch = "llama";  // llama | qwen2 | qwen3
    bool tied = false;           // leave out output.weight
    bool with_tokenizer = true;
};

// Tensor types vary on purpose: Q8_0, Q4_0, Q4_1, F16, BF16 and F32 all appear.
GgufWriter tiny_gguf(const TinyGgufOptions& options);

// config.json contents for "LlamaForCausalLM", "Qwen2ForCausalLM" or "Qwen3ForCausalLM".
nlohmann::json tiny_hf_config(const std::string& architecture);

// Every tensor the tiny config needs, F32, value of element i = (i % 17 - 8) * 0.001 + bias.
std::vector<StTensor> tiny_hf_tensors(const nlohmann::json& config);

// Writes config.json and model.safetensors into `dir`.
void write_tiny_hf(const std::filesystem::path& dir, const nlohmann::json& config);

}  // namespace se::testing
