// Tokenizer::from_gguf: the byte-level BPE vocabulary a GGUF file carries ("gpt2" model), with
// the pre-tokenizer chosen by tokenizer.ggml.pre as llama.cpp does.
#include "tokenizer/tokenizer.h"

namespace se {
namespace {

struct GgufPreset {
    std::vector<PreTokenizerStep> steps;
    Normalization normalization = Normalization::kNone;
    bool ignore_merges = false;
};

Expected<std::vector<PreTokenizerStep>> split_then_byte_level(std::string_view pattern) {
    std::vector<PreTokenizerStep> steps;
    SplitStep split;
    split.behavior = SplitBehavior::kIsolated;
    SE_ASSIGN_OR_RETURN(split.regex, Regex::compile(pattern, "tokenizer.ggml.pre"));
    steps.emplace_back(std::move(split));
    SE_ASSIGN_OR_RETURN(ByteLevelStep byte_level, make_byte_level_step(false, false));
    steps.emplace_back(std::move(byte_level));
    return steps;
}

// The HF tokenizer.json pipelines the GGUF converters map to each tokenizer.ggml.pre value.
Expected<GgufPreset> preset_for(const std::string& pre) {
    GgufPreset preset;
    if (pre == "smollm" || pre == "gpt2" || pre == "default") {
        if (pre == "smollm") preset.steps.emplace_back(DigitsStep{.individual_digits = true});
        SE_ASSIGN_OR_RETURN(ByteLevelStep byte_level, make_byte_level_step(false, true));
        preset.steps.emplace_back(std::move(byte_level));
        return preset;
    }
    if (pre == "llama-bpe" || pre == "llama3") {
        SE_ASSIGN_OR_RETURN(preset.steps, split_then_byte_level(kLlama3SplitPattern));
        preset.ignore_merges = true;
        return preset;
    }
    if (pre == "qwen2") {
        SE_ASSIGN_OR_RETURN(preset.steps, split_then_byte_level(kQwen2SplitPattern));
        preset.normalization = Normalization::kNfc;  // Qwen2's tokenizer.json normalizes to NFC
        return preset;
    }
    return unsupported("tokenizer.ggml.pre '" + pre +
                       "' is not supported (supported: smollm, gpt2, default, llama-bpe, llama3, "
                       "qwen2)");
}

Expected<std::vector<BpeMerge>> split_merges(const std::vector<std::string>& lines) {
    std::vector<BpeMerge> merges;
    merges.reserve(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
            return invalid_argument("tokenizer.ggml.merges[" + std::to_string(i) + "] '" + line +
                                    "' must be two tokens split by one space");
        merges.push_back({line.substr(0, space), line.substr(space + 1)});
    }
    return merges;
}

// Control tokens become special added tokens; user-defined ones plain added tokens. Both are
// matched in the raw text, as llama.cpp does.
std::vector<AddedToken> added_tokens_from_types(const GgufVocab& vocab) {
    std::vector<AddedToken> added;
    for (size_t id = 0; id < vocab.token_types.size(); ++id) {
        const auto type = static_cast<GgufTokenType>(vocab.token_types[id]);
        if (type != GgufTokenType::kControl && type != GgufTokenType::kUserDefined) continue;
        added.push_back({.id = static_cast<int32_t>(id),
                         .content = vocab.tokens[id],
                         .normalized = false,
                         .special = type == GgufTokenType::kControl});
    }
    return added;
}

Status check_special(const std::optional<int32_t>& id, size_t num_tokens, const char* key) {
    if (id && (*id < 0 || static_cast<size_t>(*id) >= num_tokens))
        return invalid_argument(std::string(key) + " = " + std::to_string(*id) +
                                " is outside the vocabulary (" + std::to_string(num_tokens) +
                                " tokens)");
    return {};
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_gguf(const GgufVocab& vocab) {
    if (vocab.model != "gpt2")
        return unsupported("tokenizer.ggml.model '" + vocab.model +
                           "' is not supported (only byte-level BPE, 'gpt2')");
    if (!vocab.token_types.empty() && vocab.token_types.size() != vocab.tokens.size())
        return invalid_argument("tokenizer.ggml.token_type has " +
                                std::to_string(vocab.token_types.size()) + " entries for " +
                                std::to_string(vocab.tokens.size()) + " tokens");
    SE_RETURN_IF_ERROR(
        check_special(vocab.bos_id, vocab.tokens.size(), "tokenizer.ggml.bos_token_id"));
    SE_RETURN_IF_ERROR(
        check_special(vocab.eos_id, vocab.tokens.size(), "tokenizer.ggml.eos_token_id"));
    if (vocab.add_bos && !vocab.bos_id)
        return invalid_argument("tokenizer.ggml.add_bos_token is set without a bos_token_id");
    if (vocab.add_eos && !vocab.eos_id)
        return invalid_argument("tokenizer.ggml.add_eos_token is set without an eos_token_id");
    SE_ASSIGN_OR_RETURN(GgufPreset preset, preset_for(vocab.pre));
    SE_ASSIGN_OR_RETURN(const std::vector<BpeMerge> merges, split_merges(vocab.merges));

    std::vector<std::pair<std::string, int32_t>> tokens;
    tokens.reserve(vocab.tokens.size());
    for (size_t id = 0; id < vocab.tokens.size(); ++id)
        tokens.emplace_back(vocab.tokens[id], static_cast<int32_t>(id));
    TokenizerParts parts;
    auto model =
        BpeModel::create(std::move(tokens), merges, {.ignore_merges = preset.ignore_merges});
    if (!model.ok()) return model.status().with_context("tokenizer.ggml");
    parts.model = std::move(model).value();
    parts.added_tokens = added_tokens_from_types(vocab);
    parts.normalization = preset.normalization;
    parts.pre_tokenizer = PreTokenizer(std::move(preset.steps));
    if (vocab.add_bos) parts.prefix_ids.push_back(*vocab.bos_id);
    if (vocab.add_eos) parts.suffix_ids.push_back(*vocab.eos_id);
    parts.bos_id = vocab.bos_id;
    parts.eos_id = vocab.eos_id;
    parts.added_tokens_are_plain_text = true;
    return from_parts(std::move(parts));
}

}  // namespace se
