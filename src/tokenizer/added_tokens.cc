#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace se {
namespace {

size_t prev_char_start(std::string_view text, size_t pos) {
    do {
        --pos;
    } while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
    return pos;
}

bool word_char_before(std::string_view text, size_t pos) {
    return pos > 0 && unicode::is_word_char(utf8::decode_at(text, prev_char_start(text, pos)));
}

bool word_char_at(std::string_view text, size_t pos) {
    return pos < text.size() && unicode::is_word_char(utf8::decode_at(text, pos));
}

// Start of the run of whitespace that ends at `pos`.
size_t whitespace_run_start(std::string_view text, size_t pos) {
    while (pos > 0) {
        const size_t prev = prev_char_start(text, pos);
        if (!unicode::is_white_space(utf8::decode_at(text, prev))) break;
        pos = prev;
    }
    return pos;
}

// End of the run of whitespace that starts at `pos`.
size_t whitespace_run_end(std::string_view text, size_t pos) {
    while (pos < text.size() && unicode::is_white_space(utf8::decode_at(text, pos)))
        pos += utf8::char_len(static_cast<unsigned char>(text[pos]));
    return pos;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
    nodes_.emplace_back();
    for (size_t i = 0; i < tokens_.size(); ++i) {
        if (!tokens_[i].content.empty()) insert(static_cast<int32_t>(i));
    }
}

void AddedTokenMatcher::insert(int32_t token_index) {
    const std::string& content = tokens_[token_index].content;
    can_start_[static_cast<uint8_t>(content[0])] = true;
    int32_t node = 0;
    for (char c : content) {
        const auto byte = static_cast<uint8_t>(c);
        auto& children = nodes_[node].children;
        const auto it = std::find_if(children.begin(), children.end(),
                                     [byte](const auto& edge) { return edge.first == byte; });
        if (it != children.end()) {
            node = it->second;
            continue;
        }
        const auto child = static_cast<int32_t>(nodes_.size());
        children.emplace_back(byte, child);
        nodes_.emplace_back();  // invalidates `children`; not used after this
        node = child;
    }
    // Two tokens with one content: the first keeps it, as HF's map keeps one id per content.
    if (nodes_[node].token < 0) nodes_[node].token = token_index;
}

std::pair<int32_t, size_t> AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
    std::pair<int32_t, size_t> best{-1, 0};
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto byte = static_cast<uint8_t>(text[i]);
        const auto& children = nodes_[node].children;
        const auto it = std::find_if(children.begin(), children.end(),
                                     [byte](const auto& edge) { return edge.first == byte; });
        if (it == children.end()) break;
        node = it->second;
        if (nodes_[node].token >= 0) best = {nodes_[node].token, i + 1 - pos};
    }
    return best;
}

void AddedTokenMatcher::split(std::string_view text, bool parse_special,
                              std::vector<TextPiece>& out) const {
    size_t piece_start = 0;  // first byte not yet given to a piece
    size_t pos = 0;
    while (pos < text.size()) {
        if (!can_start_[static_cast<uint8_t>(text[pos])]) {
            ++pos;
            continue;
        }
        const auto [index, len] = longest_at(text, pos);
        if (index < 0) {
            ++pos;
            continue;
        }
        size_t start = pos;
        size_t stop = pos + len;
        pos = stop;
        const AddedToken& token = tokens_[index];
        if (token.special && !parse_special) continue;
        if (token.single_word && (word_char_before(text, start) || word_char_at(text, stop)))
            continue;
        if (token.lstrip) start = std::max(whitespace_run_start(text, start), piece_start);
        if (token.rstrip) {
            stop = whitespace_run_end(text, stop);
            // Resume after the swallowed whitespace. HF rescans it, which can only matter for a
            // token that starts with whitespace, and would then emit overlapping pieces.
            pos = stop;
        }
        if (piece_start < start)
            out.push_back({text.substr(piece_start, start - piece_start), std::nullopt});
        out.push_back({text.substr(start, stop - start), token.id});
        piece_start = stop;
    }
    if (piece_start < text.size()) out.push_back({text.substr(piece_start), std::nullopt});
}

}  // namespace se
