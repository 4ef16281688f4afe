#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace se {
namespace {

// A stretch of a word, flagged when the step's pattern matched it.
struct Segment {
    size_t begin;
    size_t end;
    bool is_match;
};

// Gaps between matches become non-matching segments.
void segments_from_matches(const std::vector<ByteRange>& matches, size_t size,
                           std::vector<Segment>& out) {
    size_t prev = 0;
    for (const ByteRange& m : matches) {
        if (prev != m.begin) out.push_back({prev, m.begin, false});
        out.push_back({m.begin, m.end, true});
        prev = m.end;
    }
    if (prev != size) out.push_back({prev, size, false});
}

void literal_matches(std::string_view word, std::string_view literal, std::vector<ByteRange>& out) {
    if (literal.empty()) return;
    for (size_t pos = word.find(literal); pos != std::string_view::npos;
         pos = word.find(literal, pos + literal.size()))
        out.push_back({pos, pos + literal.size()});
}

// Every numeric character is a match of its own; the text between them is one segment.
void digit_segments(std::string_view word, std::vector<Segment>& out) {
    size_t gap_begin = 0;
    for (size_t pos = 0; pos < word.size();) {
        const int len = utf8::char_len(static_cast<unsigned char>(word[pos]));
        if (unicode::is_numeric(utf8::decode_at(word, pos))) {
            if (gap_begin < pos) out.push_back({gap_begin, pos, false});
            out.push_back({pos, pos + len, true});
            gap_begin = pos + len;
        }
        pos += len;
    }
    if (gap_begin < word.size()) out.push_back({gap_begin, word.size(), false});
}

// Folds segments into the pieces a delimiter behavior keeps (HF NormalizedString::split).
void apply_behavior(std::vector<Segment>& segs, SplitBehavior behavior) {
    std::vector<Segment> out;
    out.reserve(segs.size());
    bool previous_match = false;
    switch (behavior) {
        case SplitBehavior::kIsolated:
            for (Segment& s : segs) s.is_match = false;
            return;
        case SplitBehavior::kRemoved:
            return;
        case SplitBehavior::kContiguous:
            for (const Segment& s : segs) {
                if (s.is_match == previous_match && !out.empty())
                    out.back().end = s.end;
                else
                    out.push_back({s.begin, s.end, false});
                previous_match = s.is_match;
            }
            break;
        case SplitBehavior::kMergedWithPrevious:
            for (const Segment& s : segs) {
                if (s.is_match && !previous_match && !out.empty())
                    out.back().end = s.end;
                else
                    out.push_back({s.begin, s.end, false});
                previous_match = s.is_match;
            }
            break;
        case SplitBehavior::kMergedWithNext:
            for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
                if (it->is_match && !previous_match && !out.empty())
                    out.back().begin = it->begin;
                else
                    out.push_back({it->begin, it->end, false});
                previous_match = it->is_match;
            }
            std::reverse(out.begin(), out.end());
            break;
    }
    segs = std::move(out);
}

// Appends the kept, non-empty segments of `word` (is_match now means "remove").
void emit_pieces(std::string_view word, const std::vector<Segment>& segs,
                 std::vector<std::string_view>& out) {
    for (const Segment& s : segs) {
        if (!s.is_match && s.end > s.begin) out.push_back(word.substr(s.begin, s.end - s.begin));
    }
}

Status split_word(const SplitStep& step, std::string_view word, std::vector<Segment>& segs,
                  std::vector<std::string_view>& out) {
    std::vector<ByteRange> matches;
    if (step.regex)
        SE_RETURN_IF_ERROR(step.regex->find_all(word, matches));
    else
        literal_matches(word, step.literal, matches);
    segs.clear();
    segments_from_matches(matches, word.size(), segs);
    if (step.invert) {
        for (Segment& s : segs) s.is_match = !s.is_match;
    }
    apply_behavior(segs, step.behavior);
    emit_pieces(word, segs, out);
    return {};
}

Status byte_level_word(const ByteLevelStep& step, std::string_view word,
                       std::deque<std::string>& storage, std::vector<std::string_view>& out) {
    if (step.add_prefix_space && word.front() != ' ') {
        std::string& spaced = storage.emplace_back();
        spaced.reserve(word.size() + 1);
        spaced.push_back(' ');
        spaced.append(word);
        word = spaced;
    }
    if (!step.regex) {
        out.push_back(word);
        return {};
    }
    std::vector<ByteRange> matches;
    SE_RETURN_IF_ERROR(step.regex->find_all(word, matches));
    std::vector<Segment> segs;
    segments_from_matches(matches, word.size(), segs);
    apply_behavior(segs, SplitBehavior::kIsolated);
    emit_pieces(word, segs, out);
    return {};
}

Status apply_step(const PreTokenizerStep& step, std::vector<std::string_view>& words,
                  std::deque<std::string>& storage) {
    std::vector<std::string_view> next;
    next.reserve(words.size() * 2);
    std::vector<Segment> segs;
    for (std::string_view word : words) {
        if (const auto* split = std::get_if<SplitStep>(&step)) {
            SE_RETURN_IF_ERROR(split_word(*split, word, segs, next));
        } else if (const auto* digits = std::get_if<DigitsStep>(&step)) {
            segs.clear();
            digit_segments(word, segs);
            apply_behavior(segs, digits->individual_digits ? SplitBehavior::kIsolated
                                                           : SplitBehavior::kContiguous);
            emit_pieces(word, segs, next);
        } else {
            SE_RETURN_IF_ERROR(byte_level_word(std::get<ByteLevelStep>(step), word, storage, next));
        }
    }
    words = std::move(next);
    return {};
}

}  // namespace

Expected<ByteLevelStep> make_byte_level_step(bool add_prefix_space, bool use_regex) {
    ByteLevelStep step;
    step.add_prefix_space = add_prefix_space;
    if (use_regex) {
        SE_ASSIGN_OR_RETURN(step.regex, Regex::compile(kGpt2SplitPattern, "ByteLevel"));
    }
    return step;
}

Status PreTokenizer::split(std::string_view text, PreTokens& out) const {
    if (text.empty()) return {};
    std::vector<std::string_view> words{text};
    for (const PreTokenizerStep& step : steps_)
        SE_RETURN_IF_ERROR(apply_step(step, words, out.storage));
    out.words.insert(out.words.end(), words.begin(), words.end());
    return {};
}

}  // namespace se
