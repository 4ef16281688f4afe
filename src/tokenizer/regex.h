// A compiled PCRE2 pattern (UTF + UCP, JIT when available) with the find-all iteration the HF
// tokenizers library uses for its split regexes. PCRE2 rather than RE2 because the Llama-3 and
// Qwen2 split patterns need the lookahead in `\s+(?!\S)`.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace se {

struct ByteRange {
    size_t begin = 0;
    size_t end = 0;
};

class Regex {
  public:
    // `where` names the pattern's origin for error messages, e.g. "pre_tokenizer.pattern.Regex".
    static Expected<Regex> compile(std::string_view pattern, std::string_view where);

    // Appends the successive non-overlapping matches in `text` (valid UTF-8) to `out`. Like
    // Oniguruma's and Rust regex's find_iter, an empty match right where the previous match
    // ended is skipped. Fails only on PCRE2 resource limits.
    Status find_all(std::string_view text, std::vector<ByteRange>& out) const;

    const std::string& pattern() const { return pattern_; }

  private:
    struct Compiled;  // owns the pcre2_code; shared so that a Regex is cheap to copy
    Regex(std::string pattern, std::shared_ptr<const Compiled> compiled)
        : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}

    std::string pattern_;
    std::shared_ptr<const Compiled> compiled_;
};

}  // namespace se
