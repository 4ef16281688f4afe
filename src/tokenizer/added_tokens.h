// Added tokens (special tokens such as <|im_start|>, and user-added words) found verbatim in
// text before BPE sees it, with the matching rules of HF tokenizers' AddedVocabulary.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace se {

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool single_word = false;  // only matches with no word character on either side
    bool lstrip = false;       // swallows the whitespace before it
    bool rstrip = false;       // swallows the whitespace after it
    bool normalized = false;   // matched in normalized text rather than in the raw input
    bool special = false;      // control token: skippable in decode, literal text unless parsed
};

// A stretch of text after added-token matching: an added token, or plain text.
struct TextPiece {
    std::string_view text;
    std::optional<int32_t> token_id;
};

class AddedTokenMatcher {
  public:
    AddedTokenMatcher() = default;
    // Matches `tokens` by their `content` (the caller passes the normalized form where it
    // applies). Empty contents never match.
    explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

    // Appends the pieces of `text` to `out`. Scans left to right; at each position the longest
    // token wins, and the scan resumes after it. Special tokens match only when
    // `parse_special`; a match discarded by that or by single_word is still skipped over, as in
    // HF. Appends nothing for empty text.
    void split(std::string_view text, bool parse_special, std::vector<TextPiece>& out) const;

  private:
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node index
        int32_t token = -1;  // index into tokens_ of the token ending here
    };

    void insert(int32_t token_index);
    // Longest token starting at text[pos]: its index and byte length, or {-1, 0}.
    std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const;

    std::vector<AddedToken> tokens_;
    std::vector<Node> nodes_;
    std::array<bool, 256> can_start_{};  // first bytes of some token
};

}  // namespace se
