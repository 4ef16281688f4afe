#include "tokenizer/chat_template/lexer.h"

#include <algorithm>

#include "tokenizer/chat_template/lexer_literals.h"
#include "tokenizer/chat_template/utf8.h"

namespace se::jinja {
namespace {

bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}

bool is_name_char(char c) {
    return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_digit_char(char c) {
    return c >= '0' && c <= '9';
}

// jinja2 turns \r\n and \r into \n and drops one trailing newline (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

// Python's str.rstrip() on UTF-8.
std::string_view rstrip_space(std::string_view text) {
    std::u32string cps = utf8_decode(text);
    size_t end = cps.size();
    while (end > 0 && is_python_space(cps[end - 1])) --end;
    return text.substr(0, utf8_offset(text, end));
}

bool all_space(std::string_view text) {
    for (char32_t cp : utf8_decode(text)) {
        if (!is_python_space(cp)) return false;
    }
    return true;
}

enum class TagKind { kVariable, kBlock, kComment };

class Lexer {
  public:
    Lexer(std::string_view source, const LexerOptions& options)
        : source_(normalize_newlines(source)), options_(options) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < source_.size(); ++i) {
            if (source_[i] == '\n') line_starts_.push_back(i + 1);
        }
    }

    Expected<std::vector<Token>> run();

  private:
    SourceLoc loc_at(size_t offset) const;
    Status error_at(size_t offset, const std::string& message) const;
    void push(TokenKind kind, size_t offset, std::string text = {});
    void emit_data(std::string_view text, size_t offset, char sign, TagKind next_tag);
    size_t skip_space(size_t pos) const;
    bool match_raw_begin(size_t start, size_t* end) const;
    Status lex_raw_body(size_t start);
    Status lex_comment(size_t start);
    Status lex_tag(TagKind kind, size_t start);
    // Returns true when an end delimiter was consumed.
    bool lex_tag_end(TagKind kind);
    Status lex_tag_token();
    Status lex_number();
    Status lex_string();
    Status lex_operator();

    std::string source_;
    LexerOptions options_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
    std::vector<char> brackets_;  // closers expected, innermost last
    size_t pos_ = 0;
    bool line_starting_ = true;
};

SourceLoc Lexer::loc_at(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    size_t line_start = line_starts_[line - 1];
    std::string_view prefix(source_.data() + line_start, offset - line_start);
    return {static_cast<int>(line), static_cast<int>(utf8_length(prefix)) + 1};
}

Status Lexer::error_at(size_t offset, const std::string& message) const {
    return invalid_argument(loc_at(offset).to_string() + ": " + message);
}

void Lexer::push(TokenKind kind, size_t offset, std::string text) {
    tokens_.push_back(Token{kind, loc_at(offset), std::move(text)});
}

size_t Lexer::skip_space(size_t pos) const {
    while (pos < source_.size()) {
        size_t next = pos + 1;
        while (next < source_.size() &&
               (static_cast<unsigned char>(source_[next]) & 0xC0) == 0x80) {
            ++next;
        }
        std::u32string cp = utf8_decode(std::string_view(source_).substr(pos, next - pos));
        if (cp.size() != 1 || !is_python_space(cp[0])) break;
        pos = next;
    }
    return pos;
}

// Applies `-` (strip all whitespace before the tag) and lstrip_blocks (strip spaces between the
// line start and a block or comment tag), then emits what is left.
void Lexer::emit_data(std::string_view text, size_t offset, char sign, TagKind next_tag) {
    if (sign == '-') {
        text = rstrip_space(text);
    } else if (sign != '+' && next_tag != TagKind::kVariable && options_.lstrip_blocks) {
        size_t newline = text.rfind('\n');
        size_t line_begin = newline == std::string_view::npos ? 0 : newline + 1;
        if ((line_begin > 0 || line_starting_) && all_space(text.substr(line_begin))) {
            text = text.substr(0, line_begin);
        }
    }
    if (!text.empty()) push(TokenKind::kData, offset, std::string(text));
}

bool Lexer::match_raw_begin(size_t start, size_t* end) const {
    size_t pos = start + 2;
    if (pos < source_.size() && (source_[pos] == '-' || source_[pos] == '+')) ++pos;
    pos = skip_space(pos);
    if (source_.compare(pos, 3, "raw") != 0) return false;
    pos = skip_space(pos + 3);
    if (source_.compare(pos, 3, "-%}") == 0) {
        *end = skip_space(pos + 3);
        return true;
    }
    if (source_.compare(pos, 2, "%}") == 0) {
        *end = pos + 2;
        return true;
    }
    return false;
}

Status Lexer::lex_raw_body(size_t start) {
    for (size_t search = pos_;; ++search) {
        size_t tag = source_.find("{%", search);
        if (tag == std::string::npos) return error_at(start, "missing end of raw directive");
        size_t pos = tag + 2;
        char sign = 0;
        if (pos < source_.size() && (source_[pos] == '-' || source_[pos] == '+'))
            sign = source_[pos++];
        pos = skip_space(pos);
        if (source_.compare(pos, 6, "endraw") != 0) continue;
        pos = skip_space(pos + 6);
        size_t end;
        if (source_.compare(pos, 3, "+%}") == 0) {
            end = pos + 3;
        } else if (source_.compare(pos, 3, "-%}") == 0) {
            end = skip_space(pos + 3);
        } else if (source_.compare(pos, 2, "%}") == 0) {
            end = pos + 2;
            if (options_.trim_blocks && end < source_.size() && source_[end] == '\n') ++end;
        } else {
            continue;
        }
        emit_data(std::string_view(source_).substr(pos_, tag - pos_), pos_, sign, TagKind::kBlock);
        line_starting_ = source_[end - 1] == '\n';
        pos_ = end;
        return {};
    }
}

Status Lexer::lex_comment(size_t start) {
    size_t close = source_.find("#}", pos_);
    if (close == std::string::npos) return error_at(start, "missing end of comment tag '#}'");
    size_t end = close + 2;
    if (close > pos_ && source_[close - 1] == '-') {
        end = skip_space(end);
    } else if (!(close > pos_ && source_[close - 1] == '+')) {
        if (options_.trim_blocks && end < source_.size() && source_[end] == '\n') ++end;
    }
    line_starting_ = source_[end - 1] == '\n';
    pos_ = end;
    return {};
}

bool Lexer::lex_tag_end(TagKind kind) {
    if (!brackets_.empty()) return false;
    const bool block = kind == TagKind::kBlock;
    const char* close = block ? "%}" : "}}";
    size_t end;
    if (block && source_.compare(pos_, 3, "+%}") == 0) {
        end = pos_ + 3;
    } else if (source_.compare(pos_, 1, "-") == 0 && source_.compare(pos_ + 1, 2, close) == 0) {
        end = skip_space(pos_ + 3);
    } else if (source_.compare(pos_, 2, close) == 0) {
        end = pos_ + 2;
        if (block && options_.trim_blocks && end < source_.size() && source_[end] == '\n') ++end;
    } else {
        return false;
    }
    push(block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, pos_);
    line_starting_ = source_[end - 1] == '\n';
    pos_ = end;
    return true;
}

Status Lexer::lex_tag(TagKind kind, size_t start) {
    push(kind == TagKind::kBlock ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, start);
    brackets_.clear();
    while (true) {
        pos_ = skip_space(pos_);
        if (pos_ >= source_.size()) {
            return error_at(start, kind == TagKind::kBlock
                                       ? "unexpected end of template, '{%' is never closed"
                                       : "unexpected end of template, '{{' is never closed");
        }
        if (lex_tag_end(kind)) return {};
        SE_RETURN_IF_ERROR(lex_tag_token());
    }
}

Status Lexer::lex_tag_token() {
    char c = source_[pos_];
    if (is_digit_char(c)) return lex_number();
    if (is_name_start(c)) {
        size_t end = pos_;
        while (end < source_.size() && is_name_char(source_[end])) ++end;
        push(TokenKind::kName, pos_, source_.substr(pos_, end - pos_));
        pos_ = end;
        return {};
    }
    if (c == '\'' || c == '"') return lex_string();
    return lex_operator();
}

Status Lexer::lex_operator() {
    static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwoChar) {
        if (source_.compare(pos_, 2, op) == 0) {
            push(TokenKind::kOperator, pos_, std::string(op));
            pos_ += 2;
            return {};
        }
    }
    char c = source_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
        return error_at(pos_, std::string("unexpected character '") + c + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') {
        brackets_.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
        if (brackets_.empty()) return error_at(pos_, std::string("unexpected '") + c + "'");
        if (brackets_.back() != c) {
            return error_at(
                pos_, std::string("unexpected '") + c + "', expected '" + brackets_.back() + "'");
        }
        brackets_.pop_back();
    }
    push(TokenKind::kOperator, pos_, std::string(1, c));
    ++pos_;
    return {};
}

Status Lexer::lex_number() {
    Token token{TokenKind::kInteger, loc_at(pos_)};
    bool after_dot = pos_ > 0 && source_[pos_ - 1] == '.';
    auto end = after_dot ? read_integer(source_, pos_, &token) : read_number(source_, pos_, &token);
    if (!end.ok()) return error_at(pos_, end.status().message());
    tokens_.push_back(std::move(token));
    pos_ = *end;
    return {};
}

Status Lexer::lex_string() {
    Token token{TokenKind::kString, loc_at(pos_)};
    auto end = read_string(source_, pos_, &token);
    if (!end.ok()) return error_at(pos_, end.status().message());
    tokens_.push_back(std::move(token));
    pos_ = *end;
    return {};
}

Expected<std::vector<Token>> Lexer::run() {
    while (pos_ < source_.size()) {
        size_t start = pos_;
        TagKind kind = TagKind::kVariable;
        for (;; ++start) {
            start = source_.find('{', start);
            if (start == std::string::npos || start + 1 >= source_.size()) {
                start = std::string::npos;
                break;
            }
            char next = source_[start + 1];
            if (next == '{' || next == '%' || next == '#') {
                kind = next == '{' ? TagKind::kVariable
                                   : (next == '%' ? TagKind::kBlock : TagKind::kComment);
                break;
            }
        }
        if (start == std::string::npos) {
            push(TokenKind::kData, pos_, source_.substr(pos_));
            break;
        }
        char sign = 0;
        if (start + 2 < source_.size() &&
            (source_[start + 2] == '-' || source_[start + 2] == '+')) {
            sign = source_[start + 2];
        }
        size_t raw_end = 0;
        bool raw = kind == TagKind::kBlock && match_raw_begin(start, &raw_end);
        emit_data(std::string_view(source_).substr(pos_, start - pos_), pos_, sign, kind);
        pos_ = start + 2 + (sign != 0 ? 1 : 0);
        line_starting_ = false;
        if (raw) {
            pos_ = raw_end;
            line_starting_ = source_[raw_end - 1] == '\n';
            SE_RETURN_IF_ERROR(lex_raw_body(start));
        } else if (kind == TagKind::kComment) {
            SE_RETURN_IF_ERROR(lex_comment(start));
        } else {
            SE_RETURN_IF_ERROR(lex_tag(kind, start));
        }
    }
    push(TokenKind::kEof, source_.size());
    return std::move(tokens_);
}

}  // namespace

Expected<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options) {
    Lexer lexer(source, options);
    return lexer.run();
}

std::string describe_token(const Token& token) {
    switch (token.kind) {
        case TokenKind::kData:
            return "template data";
        case TokenKind::kVariableBegin:
            return "'{{'";
        case TokenKind::kVariableEnd:
            return "end of print statement '}}'";
        case TokenKind::kBlockBegin:
            return "'{%'";
        case TokenKind::kBlockEnd:
            return "end of statement block '%}'";
        case TokenKind::kName:
            return "'" + token.text + "'";
        case TokenKind::kString:
            return "string literal";
        case TokenKind::kInteger:
        case TokenKind::kFloat:
            return "number";
        case TokenKind::kOperator:
            return "'" + token.text + "'";
        case TokenKind::kEof:
            return "end of template";
    }
    return "token";
}

}  // namespace se::jinja
