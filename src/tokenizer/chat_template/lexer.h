// Splits a template into tokens the way jinja2's lexer does with trim_blocks and lstrip_blocks
// on: text between tags becomes data tokens with whitespace control already applied, and the
// inside of {{ }} and {% %} becomes names, literals and operators. Comments vanish here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "tokenizer/chat_template/source_loc.h"

namespace se::jinja {

enum class TokenKind {
    kData,
    kVariableBegin,
    kVariableEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInteger,
    kFloat,
    kOperator,
    kEof,
};

struct Token {
    TokenKind kind = TokenKind::kEof;
    SourceLoc loc = {};
    std::string text = {};  // data, name, operator, or the decoded string literal
    int64_t int_value = 0;
    double float_value = 0.0;
};

struct LexerOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

Expected<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options);

// Human description of a token for "expected X, got Y" messages.
std::string describe_token(const Token& token);

}  // namespace se::jinja
