#include "tokenizer/chat_template/py_string.h"

#include <algorithm>

#include "tokenizer/chat_template/utf8.h"

namespace se::jinja {
namespace {

bool is_cased(char32_t cp) {
    return is_upper(cp) || is_lower(cp) || to_upper(cp) != to_lower(cp);
}

bool is_line_break(char32_t cp) {
    switch (cp) {
        case '\n':
        case '\r':
        case 0x0B:
        case 0x0C:
        case 0x1C:
        case 0x1D:
        case 0x1E:
        case 0x85:
        case 0x2028:
        case 0x2029:
            return true;
        default:
            return false;
    }
}

// Splits on whitespace runs, Python's sep=None algorithm.
std::vector<std::string> split_whitespace(std::u32string_view cps, int64_t maxsplit,
                                          Direction direction) {
    std::vector<std::u32string> parts;
    if (direction == Direction::kFromLeft) {
        size_t i = 0;
        while (true) {
            while (i < cps.size() && is_python_space(cps[i])) ++i;
            if (i >= cps.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
                parts.emplace_back(cps.substr(i));  // the remainder keeps its trailing spaces
                break;
            }
            size_t start = i;
            while (i < cps.size() && !is_python_space(cps[i])) ++i;
            parts.emplace_back(cps.substr(start, i - start));
        }
    } else {
        size_t i = cps.size();
        while (true) {
            while (i > 0 && is_python_space(cps[i - 1])) --i;
            if (i == 0) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
                parts.emplace_back(cps.substr(0, i));  // the remainder keeps its leading spaces
                break;
            }
            size_t end = i;
            while (i > 0 && !is_python_space(cps[i - 1])) --i;
            parts.emplace_back(cps.substr(i, end - i));
        }
        std::reverse(parts.begin(), parts.end());
    }
    std::vector<std::string> out;
    for (const auto& part : parts) out.push_back(utf8_encode(part));
    return out;
}

}  // namespace

Status check_built_size(int64_t size) {
    if (size <= kMaxBuiltString) return {};
    return resource_exhausted("result of " + std::to_string(size) +
                              " bytes or items is larger than " + std::to_string(kMaxBuiltString));
}

std::string py_strip(std::string_view text, std::optional<std::string_view> chars, StripSide side) {
    std::u32string cps = utf8_decode(text);
    std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
    auto strip_me = [&](char32_t cp) {
        return chars ? set.find(cp) != std::u32string::npos : is_python_space(cp);
    };
    size_t begin = 0, end = cps.size();
    if (side != StripSide::kRight) {
        while (begin < end && strip_me(cps[begin])) ++begin;
    }
    if (side != StripSide::kLeft) {
        while (end > begin && strip_me(cps[end - 1])) --end;
    }
    return utf8_encode(std::u32string_view(cps).substr(begin, end - begin));
}

Expected<std::vector<std::string>> py_split(std::string_view text,
                                            std::optional<std::string_view> sep, int64_t maxsplit,
                                            Direction direction) {
    if (!sep) return split_whitespace(utf8_decode(text), maxsplit, direction);
    if (sep->empty()) return invalid_argument("empty separator");
    std::vector<std::string> parts;
    if (direction == Direction::kFromLeft) {
        size_t start = 0;
        while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
            size_t hit = text.find(*sep, start);
            if (hit == std::string_view::npos) break;
            parts.emplace_back(text.substr(start, hit - start));
            start = hit + sep->size();
        }
        parts.emplace_back(text.substr(start));
        return parts;
    }
    size_t end = text.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        if (end < sep->size()) break;
        size_t hit = text.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
    }
    parts.emplace_back(text.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
}

std::vector<std::string> py_splitlines(std::string_view text, LineEnds line_ends) {
    std::u32string cps = utf8_decode(text);
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (!is_line_break(cps[i])) continue;
        size_t eol = i;
        if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
        size_t end = line_ends == LineEnds::kKeep ? i + 1 : eol;
        lines.push_back(utf8_encode(std::u32string_view(cps).substr(start, end - start)));
        start = i + 1;
    }
    if (start < cps.size()) lines.push_back(utf8_encode(std::u32string_view(cps).substr(start)));
    return lines;
}

std::string py_replace(std::string_view text, std::string_view old, std::string_view repl,
                       int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts `repl` before every code point and at the end.
        std::u32string cps = utf8_decode(text);
        int64_t done = 0;
        for (char32_t cp : cps) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            append_utf8(out, cp);
        }
        if (count < 0 || done < count) out += repl;
        return out;
    }
    size_t start = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        size_t hit = text.find(old, start);
        if (hit == std::string_view::npos) break;
        out.append(text.substr(start, hit - start));
        out.append(repl);
        start = hit + old.size();
    }
    out.append(text.substr(start));
    return out;
}

int64_t py_find(std::string_view text, std::string_view sub, Direction direction) {
    size_t hit = direction == Direction::kFromRight ? text.rfind(sub) : text.find(sub);
    if (hit == std::string_view::npos) return -1;
    return static_cast<int64_t>(utf8_length(text.substr(0, hit)));
}

int64_t py_count(std::string_view text, std::string_view sub) {
    if (sub.empty()) return static_cast<int64_t>(utf8_length(text)) + 1;
    int64_t count = 0;
    for (size_t pos = text.find(sub); pos != std::string_view::npos;
         pos = text.find(sub, pos + sub.size())) {
        ++count;
    }
    return count;
}

std::string py_title(std::string_view text) {
    std::string out;
    bool previous_cased = false;
    for (char32_t cp : utf8_decode(text)) {
        bool cased = is_cased(cp);
        append_utf8(out, cased ? (previous_cased ? to_lower(cp) : to_upper(cp)) : cp);
        previous_cased = cased;
    }
    return out;
}

std::string py_capitalize(std::string_view text) {
    std::string out;
    bool first = true;
    for (char32_t cp : utf8_decode(text)) {
        append_utf8(out, first ? to_upper(cp) : to_lower(cp));
        first = false;
    }
    return out;
}

std::string jinja_title(std::string_view text) {
    std::string out;
    bool word_start = true;
    for (char32_t cp : utf8_decode(text)) {
        bool separator =
            is_python_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
        if (separator) {
            append_utf8(out, cp);
            word_start = true;
        } else {
            append_utf8(out, word_start ? to_upper(cp) : to_lower(cp));
            word_start = false;
        }
    }
    return out;
}

std::string html_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace se::jinja
