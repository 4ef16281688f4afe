#include "model/gguf_tensor_names.h"

#include <fmt/core.h>

#include <array>
#include <charconv>
#include <span>
#include <utility>

namespace se {
namespace {

using NamePair = std::pair<std::string_view, std::string_view>;

constexpr std::array<NamePair, 3> kTopLevel = {{
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
}};

// Inside blk.N. (left) and model.layers.N. (right).
constexpr std::array<NamePair, 15> kInBlock = {{
    {"attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.bias", "self_attn.o_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
}};

std::optional<std::string_view> lookup(std::span<const NamePair> table, std::string_view key) {
    for (const auto& [from, to] : table) {
        if (from == key) return to;
    }
    return std::nullopt;
}

}  // namespace

std::optional<HfTensorName> hf_tensor_name(std::string_view gguf_name) {
    if (const auto top = lookup(kTopLevel, gguf_name))
        return HfTensorName{.name = std::string(*top), .layer = std::nullopt};
    constexpr std::string_view kBlock = "blk.";
    if (!gguf_name.starts_with(kBlock)) return std::nullopt;
    const std::string_view rest = gguf_name.substr(kBlock.size());
    int64_t layer = -1;
    const auto [end, err] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    if (err != std::errc() || layer < 0 || end == rest.data() + rest.size() || *end != '.')
        return std::nullopt;
    const std::string_view suffix = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
    const auto mapped = lookup(kInBlock, suffix);
    if (!mapped) return std::nullopt;
    return HfTensorName{.name = fmt::format("model.layers.{}.{}", layer, *mapped), .layer = layer};
}

}  // namespace se
