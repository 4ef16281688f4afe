// The byte-level BPE model: a vocabulary of byte-level strings and ranked merge rules. Encodes
// one pre-tokenized word at a time, merging the lowest-ranked adjacent pair first (leftmost on
// ties) as HF tokenizers' BPE does.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/expected.h"
#include "tokenizer/word_cache.h"

namespace se {

struct BpeMerge {
    std::string left;   // byte-level token
    std::string right;  // byte-level token
};

struct BpeModelOptions {
    // A word that is itself a vocabulary token is emitted whole, without merging (Llama 3).
    bool ignore_merges = false;
    size_t cache_capacity = 1 << 16;  // words; 0 disables the cache
};

class BpeModel {
  public:
    // `vocab` maps byte-level token strings to ids (ids need not be dense; a repeated string
    // maps to its last id). A merge whose
    // tokens or whose concatenation are not in the vocabulary is an error; a later duplicate of
    // a merge takes over its rank.
    static Expected<BpeModel> create(std::vector<std::pair<std::string, int32_t>> vocab,
                                     const std::vector<BpeMerge>& merges,
                                     const BpeModelOptions& options);

    // Appends the ids of `word` (raw bytes, one pre-tokenized word) to `out`. Bytes whose
    // single-byte token is missing from the vocabulary are dropped, as HF does without an
    // unk_token.
    void encode_word(std::string_view word, std::vector<int32_t>& out) const;

    std::optional<int32_t> token_to_id(std::string_view token) const;
    // Byte-level text of token `id`, or nullptr when no token has that id.
    const std::string* token(int32_t id) const;
    // Whether every single-byte token exists, so that no input byte is ever dropped.
    bool has_all_bytes() const;
    // One past the largest token id.
    int32_t id_limit() const { return static_cast<int32_t>(tokens_.size()); }

  private:
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    struct MergeRule {
        uint32_t rank;
        int32_t new_id;
    };

    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
               static_cast<uint32_t>(right);
    }
    const MergeRule* find_merge(int32_t left, int32_t right) const;
    void merge_word(std::string_view word, std::vector<int32_t>& out) const;

    std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> vocab_;
    std::vector<std::string> tokens_;                 // by id; empty where no token has the id
    std::vector<uint8_t> has_token_;                  // by id
    std::unordered_map<uint64_t, MergeRule> merges_;  // keyed by pair_key(left id, right id)
    std::array<int32_t, 256> byte_ids_{};             // id of each single-byte token, -1 if missing
    bool ignore_merges_ = false;
    std::unique_ptr<WordCache> cache_;
};

}  // namespace se
