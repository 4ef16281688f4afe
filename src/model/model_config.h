// The shape of a decoder-only transformer, whichever file it came from (config.json or GGUF
// metadata). Architecture differences the forward pass must honour are explicit fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/dtype.h"
#include "core/status.h"

namespace se {

enum class ArchFamily : uint8_t {
    kLlama,  // LlamaForCausalLM (Llama 3.x, SmolLM2)
    kQwen2,  // Qwen2ForCausalLM: biases on q/k/v projections
    kQwen3,  // Qwen3ForCausalLM: per-head RMSNorm on q and k before RoPE
};

enum class RopeScalingType : uint8_t { kNone, kLlama3, kLinear };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::kNone;
    float factor = 1.0f;
    float low_freq_factor = 1.0f;                  // llama3
    float high_freq_factor = 4.0f;                 // llama3
    int32_t original_max_position_embeddings = 0;  // llama3
};

struct ModelConfig {
    // As the file names it: "LlamaForCausalLM" (config.json) or "llama" (GGUF).
    std::string architecture;
    ArchFamily family = ArchFamily::kLlama;
    int32_t vocab_size = 0;
    int32_t hidden_size = 0;
    int32_t intermediate_size = 0;
    int32_t num_layers = 0;
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;
    int32_t max_position_embeddings = 0;
    float rms_norm_eps = 1e-6f;
    float rope_theta = 10000.0f;
    RopeScaling rope_scaling;
    // GGUF files of Llama 3.1 carry llama3 scaling precomputed as tensor rope_freqs:
    // inv_freq[i] /= rope_freq_factors[i]. Empty when absent.
    std::vector<float> rope_freq_factors;
    RopeStyle rope_style = RopeStyle::kNeox;
    bool tie_word_embeddings = false;
    bool attention_bias = false;       // q/k/v projections carry a bias
    bool qk_norm = false;              // per-head RMSNorm on q and k
    DType torch_dtype = DType::kBF16;  // dtype the checkpoint declares
    std::optional<int32_t> bos_token_id;
    std::vector<int32_t> eos_token_ids;

    // Checks every field against the others; the error names the offending field.
    Status validate() const;
};

// RoPE inverse frequencies f32 [head_dim / 2] with the configured scaling applied.
std::vector<float> rope_inv_freq(const ModelConfig& config);

}  // namespace se
