// Byte-level BPE tokenizer, equal in output to HF `tokenizers` for the tokenizer.json files of
// GPT-2-style models (SmolLM2, Llama 3, Qwen2/3) and to the GGUF "gpt2" vocabularies of the same
// models.
//
//   text ─► UTF-8 repair ─► added tokens (raw) ─► normalizer ─► added tokens (normalized)
//        ─► pre-tokenizer (Split / Digits / ByteLevel) ─► BPE per word ─► template (BOS...)
//
// Input that is not valid UTF-8 is repaired first: every maximal ill-formed subsequence
// becomes U+FFFD, as Python's bytes.decode("utf-8", errors="replace") does; HF only accepts
// valid strings, so that is the reference the tests hold this to.
//
// tokenizer.json's truncation and padding settings are ignored, as transformers does unless a
// call asks for them.
//
// Thread safety: all const methods may run concurrently (the word cache locks internally).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/expected.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/pre_tokenizer.h"

namespace se {

struct EncodeOptions {
    // Add what the tokenizer declares around a sequence: tokenizer.json's TemplateProcessing
    // post-processor, GGUF's add_bos/add_eos.
    bool add_special_tokens = true;
    // Special tokens written in the text become single tokens; otherwise they are encoded as
    // plain text. Non-special added tokens are matched either way (as in HF).
    bool parse_special = true;
};

struct DecodeOptions {
    bool skip_special_tokens = false;
};

// What tokenizer_config.json says and tokenizer.json does not.
struct TokenizerJsonOptions {
    std::string bos_token = {};  // empty: the special token the post-processor puts first, if any
    std::string eos_token = {};  // empty: none
};

enum class Normalization { kNone, kNfc };

// The pieces a tokenizer is made of, as the tokenizer.json and GGUF readers produce them.
struct TokenizerParts {
    BpeModel model;
    std::vector<AddedToken> added_tokens;
    Normalization normalization = Normalization::kNone;
    PreTokenizer pre_tokenizer;
    std::vector<int32_t> prefix_ids;  // put before the text when add_special_tokens
    std::vector<int32_t> suffix_ids;  // put after it
    std::optional<int32_t> bos_id;
    std::optional<int32_t> eos_id;
    // GGUF stores added tokens as plain text; tokenizer.json's byte-level decoder first tries
    // reading them in the byte-level alphabet.
    bool added_tokens_are_plain_text = false;
};

class Tokenizer {
  public:
    // `text` is the content of an HF tokenizer.json. Errors name the offending field.
    static Expected<Tokenizer> from_json(std::string_view tokenizer_json_text,
                                         const TokenizerJsonOptions& options = {});
    static Expected<Tokenizer> from_json_file(const std::string& path,
                                              const TokenizerJsonOptions& options = {});
    static Expected<Tokenizer> from_gguf(const GgufVocab& vocab);
    static Expected<Tokenizer> from_parts(TokenizerParts parts);

    Expected<std::vector<int32_t>> encode(std::string_view text,
                                          const EncodeOptions& options = {}) const;

    // The text of `ids`; invalid UTF-8 in the joined bytes becomes U+FFFD (HF's lossy decode).
    // An id outside the vocabulary is an error.
    Expected<std::string> decode(std::span<const int32_t> ids,
                                 const DecodeOptions& options = {}) const;

    // Appends the raw bytes of token `id` (nothing for a skipped special token).
    Status append_token_bytes(int32_t id, const DecodeOptions& options, std::string& out) const;
    // The raw bytes of token `id`: possibly part of a UTF-8 character.
    Expected<std::string> token_bytes(int32_t id) const;

    // The token as the vocabulary stores it (byte-level alphabet for BPE tokens; added tokens
    // in their normalized form).
    Expected<std::string_view> token_text(int32_t id) const;

    // One past the largest token id (the rows the embedding table needs).
    int32_t vocab_size() const { return static_cast<int32_t>(kinds_.size()); }
    std::optional<int32_t> token_to_id(std::string_view token) const;
    std::optional<int32_t> bos_id() const { return bos_id_; }
    std::optional<int32_t> eos_id() const { return eos_id_; }
    bool is_special(int32_t id) const;
    // Ids of the special (control) tokens, ascending.
    const std::vector<int32_t>& special_ids() const { return special_ids_; }

  private:
    enum class Kind : uint8_t { kNone, kModel, kAdded, kSpecial };

    Tokenizer() = default;
    static Expected<Tokenizer> build_from_json(std::string_view tokenizer_json_text,
                                               const TokenizerJsonOptions& options);
    Status encode_text(std::string_view text, const EncodeOptions& options,
                       std::vector<int32_t>& ids) const;
    Status encode_normalized(std::string_view text, const EncodeOptions& options,
                             std::vector<int32_t>& ids) const;
    Status check_id(int32_t id) const;

    BpeModel model_;
    Normalization normalization_ = Normalization::kNone;
    PreTokenizer pre_tokenizer_;
    AddedTokenMatcher raw_matcher_;         // added tokens with normalized == false
    AddedTokenMatcher normalized_matcher_;  // the others, by their normalized content
    std::vector<Kind> kinds_;               // by id
    std::unordered_map<int32_t, std::string> added_text_;   // id -> content (normalized)
    std::unordered_map<int32_t, std::string> added_bytes_;  // id -> what it decodes to
    std::unordered_map<std::string, int32_t> added_ids_;    // original content -> id
    std::vector<int32_t> prefix_ids_;
    std::vector<int32_t> suffix_ids_;
    std::optional<int32_t> bos_id_;
    std::optional<int32_t> eos_id_;
    std::vector<int32_t> special_ids_;
};

}  // namespace se
