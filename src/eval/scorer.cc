#include "eval/scorer.h"

#include <algorithm>
#include <cctype>

#include "core/check.h"

namespace se::eval {
namespace {

bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool contains_word(std::string_view text, std::string_view word) {
    auto same = [](char a, char b) { return lower(a) == lower(b); };
    for (auto it = text.begin();; ++it) {
        it = std::search(it, text.end(), word.begin(), word.end(), same);
        if (it == text.end()) return false;
        const size_t at = static_cast<size_t>(it - text.begin());
        const bool open_left = at == 0 || !is_word_char(text[at - 1]);
        const size_t end = at + word.size();
        const bool open_right = end == text.size() || !is_word_char(text[end]);
        if (open_left && open_right) return true;
    }
}

}  // namespace

bool is_correct(std::span<const std::string> expected, std::string_view answer) {
    SE_CHECK(!expected.empty());
    return std::all_of(expected.begin(), expected.end(), [&](const std::string& word) {
        return !word.empty() && contains_word(answer, word);
    });
}

}  // namespace se::eval
