// Tokens, literals and whitespace control as jinja2's lexer produces them.
#include "tokenizer/chat_template/lexer.h"

#include <gtest/gtest.h>

namespace se::jinja {
namespace {

std::vector<Token> lex(std::string_view source) {
    auto tokens = tokenize(source, LexerOptions{});
    EXPECT_TRUE(tokens.ok()) << tokens.status().to_string();
    return tokens.ok() ? *tokens : std::vector<Token>{};
}

// The data tokens joined, i.e. the text a template without tags would output.
std::string data_of(std::string_view source) {
    std::string out;
    for (const Token& token : lex(source)) {
        if (token.kind == TokenKind::kData) out += token.text;
    }
    return out;
}

TEST(LexerTest, TagContentsBecomeTokens) {
    auto tokens = lex("a{{ x.y|f(1, 'b') }}");
    std::vector<TokenKind> kinds;
    for (const Token& t : tokens) kinds.push_back(t.kind);
    using K = TokenKind;
    EXPECT_EQ(kinds,
              (std::vector<K>{K::kData, K::kVariableBegin, K::kName, K::kOperator, K::kName,
                              K::kOperator, K::kName, K::kOperator, K::kInteger, K::kOperator,
                              K::kString, K::kOperator, K::kVariableEnd, K::kEof}));
    EXPECT_EQ(tokens[2].loc.column, 5);
}

TEST(LexerTest, NumberLiterals) {
    auto tokens = lex("{{ 1_000 0x1F 0o17 0b101 1e3 2.5E-2 x.0 }}");
    EXPECT_EQ(tokens[1].int_value, 1000);
    EXPECT_EQ(tokens[2].int_value, 31);
    EXPECT_EQ(tokens[3].int_value, 15);
    EXPECT_EQ(tokens[4].int_value, 5);
    EXPECT_EQ(tokens[5].kind, TokenKind::kFloat);
    EXPECT_DOUBLE_EQ(tokens[5].float_value, 1000.0);
    EXPECT_DOUBLE_EQ(tokens[6].float_value, 0.025);
    // `x.0` is attribute 0, not a float.
    EXPECT_EQ(tokens[8].text, ".");
    EXPECT_EQ(tokens[9].kind, TokenKind::kInteger);
}

TEST(LexerTest, StringEscapesFollowPython) {
    auto tokens = lex(R"({{ 'a\n\t\'' "\x41\u00e9\101" '\q' }})");
    EXPECT_EQ(tokens[1].text, "a\n\t'");
    EXPECT_EQ(tokens[2].text, "A\u00e9A");
    EXPECT_EQ(tokens[3].text, "\\q");
}

TEST(LexerTest, WhitespaceControl) {
    EXPECT_EQ(data_of("a \n {%- if x %} b {% endif -%} \n c"), "a b c");
    EXPECT_EQ(data_of("a {#- comment -#} b"), "ab");
}

TEST(LexerTest, TrimBlocksRemovesOneNewlineAfterBlockTags) {
    EXPECT_EQ(data_of("{% if x %}\n\nline"), "\nline");
    EXPECT_EQ(data_of("{{ x }}\nline"), "\nline");  // not after print tags
    EXPECT_EQ(data_of("{% if x +%}\nline"), "\nline");
}

TEST(LexerTest, LstripBlocksRemovesIndentBeforeBlockTags) {
    EXPECT_EQ(data_of("a\n    {% if x %}"), "a\n");
    EXPECT_EQ(data_of("a\n  \t{# c #}"), "a\n");
    EXPECT_EQ(data_of("a\n    {{ x }}"), "a\n    ");  // not before print tags
    EXPECT_EQ(data_of("a b {% if x %}"), "a b ");     // only when the tag starts the line
    EXPECT_EQ(data_of("a\n    {%+ if x %}"), "a\n    ");
}

TEST(LexerTest, NewlinesAreNormalizedAndOneTrailingNewlineDropped) {
    EXPECT_EQ(data_of("a\r\nb\rc\n"), "a\nb\nc");
    EXPECT_EQ(data_of("a\n\n"), "a\n");
}

TEST(LexerTest, BracesInsideTagsDoNotEndThem) {
    auto tokens = lex("{{ {'a': {'b': 1}} }}");
    EXPECT_EQ(tokens[tokens.size() - 2].kind, TokenKind::kVariableEnd);
}

TEST(LexerTest, ErrorsNameThePosition) {
    auto bad = tokenize("x\n {{ 'abc }}", LexerOptions{});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("line 2:5"), std::string::npos) << bad.status().message();
    EXPECT_FALSE(tokenize("{{ x ? y }}", LexerOptions{}).ok());
    EXPECT_FALSE(tokenize("{{ x ) }}", LexerOptions{}).ok());
}

}  // namespace
}  // namespace se::jinja
