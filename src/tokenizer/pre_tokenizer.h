// Pre-tokenization: splitting normalized text into the words that BPE encodes one at a time,
// with the semantics of the HF tokenizers pre-tokenizers Split, Digits and ByteLevel.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/expected.h"
#include "tokenizer/regex.h"

namespace se {

// The split pattern of GPT-2, built into HF's ByteLevel pre-tokenizer (use_regex = true).
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// What happens to a matched delimiter (HF SplitDelimiterBehavior).
enum class SplitBehavior {
    kRemoved,             // dropped
    kIsolated,            // a piece of its own
    kMergedWithPrevious,  // appended to the piece before it
    kMergedWithNext,      // prepended to the piece after it
    kContiguous,          // consecutive matches (and consecutive non-matches) form one piece
};

struct SplitStep {
    std::optional<Regex> regex;  // a Regex pattern, or
    std::string literal;         // a String pattern (matched literally) when regex is empty
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;  // split on the text between matches instead
};

struct DigitsStep {
    bool individual_digits = false;  // each digit alone, else runs of digits together
};

// Must come last: BPE reads its words as bytes in the byte-level alphabet.
struct ByteLevelStep {
    bool add_prefix_space = false;
    std::optional<Regex> regex;  // the GPT-2 pattern when use_regex
};

using PreTokenizerStep = std::variant<SplitStep, DigitsStep, ByteLevelStep>;

Expected<ByteLevelStep> make_byte_level_step(bool add_prefix_space, bool use_regex);

// Words of one text: views into the caller's text, or into `storage` for words that gained a
// prefix space.
struct PreTokens {
    std::vector<std::string_view> words;
    std::deque<std::string> storage;
};

class PreTokenizer {
  public:
    PreTokenizer() = default;
    explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}

    // Appends the words of `text` (valid UTF-8) to `out`; empty words are dropped.
    Status split(std::string_view text, PreTokens& out) const;

  private:
    std::vector<PreTokenizerStep> steps_;
};

}  // namespace se
