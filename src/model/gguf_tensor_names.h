// Translation of llama.cpp tensor names (token_embd.weight, blk.3.attn_q.weight) to the HF
// transformers names the engine uses (model.embed_tokens.weight,
// model.layers.3.self_attn.q_proj.weight).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace se {

struct HfTensorName {
    std::string name;
    std::optional<int64_t> layer;  // the N of blk.N, for tensors inside a block
};

// nullopt for names the supported architectures do not use.
std::optional<HfTensorName> hf_tensor_name(std::string_view gguf_name);

}  // namespace se
