// Expectations checked against HF tokenizers' AddedVocabulary on the same inputs.
#include "tokenizer/added_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace se {
namespace {

// Pieces rendered as "text" for plain text and "[text]" for a matched token.
std::vector<std::string> pieces(const AddedTokenMatcher& m, std::string_view text,
                                bool parse_special = true) {
    std::vector<TextPiece> out;
    m.split(text, parse_special, out);
    std::vector<std::string> rendered;
    for (const TextPiece& p : out) {
        std::string& r = rendered.emplace_back();
        if (p.token_id) r += '[';
        r += p.text;
        if (p.token_id) r += ']';
    }
    return rendered;
}

using Pieces = std::vector<std::string>;

AddedToken token(int32_t id, std::string content) {
    return {.id = id, .content = std::move(content)};
}

TEST(AddedTokenMatcherTest, LongestTokenAtTheLeftmostPosition) {
    AddedTokenMatcher m({token(1, "<a>"), token(2, "<a><b>"), token(3, "bcd"), token(4, "ab")});
    EXPECT_EQ(pieces(m, "x<a><b>y"), (Pieces{"x", "[<a><b>]", "y"}));
    EXPECT_EQ(pieces(m, "<a><a>"), (Pieces{"[<a>]", "[<a>]"}));
    EXPECT_EQ(pieces(m, "abcd"), (Pieces{"[ab]", "cd"}));
    EXPECT_EQ(pieces(m, "no tokens"), (Pieces{"no tokens"}));
    EXPECT_TRUE(pieces(m, "").empty());
}

TEST(AddedTokenMatcherTest, TokenIdsAreReported) {
    AddedTokenMatcher m({token(7, "<s>")});
    std::vector<TextPiece> out;
    m.split("a<s>", true, out);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_FALSE(out[0].token_id.has_value());
    EXPECT_EQ(out[1].token_id, 7);
}

TEST(AddedTokenMatcherTest, UnparsedSpecialTokenIsSkippedOverWhole) {
    AddedToken special = token(1, "<|im_start|>");
    special.special = true;
    AddedTokenMatcher m({special, token(2, "im_s")});
    EXPECT_EQ(pieces(m, "<|im_start|>", false), (Pieces{"<|im_start|>"}));
    EXPECT_EQ(pieces(m, "x<|im_start|>", false), (Pieces{"x<|im_start|>"}));
    EXPECT_EQ(pieces(m, "<|im_start|>", true), (Pieces{"[<|im_start|>]"}));
    EXPECT_EQ(pieces(m, "im_s", false), (Pieces{"[im_s]"}));
}

TEST(AddedTokenMatcherTest, SingleWordNeedsNonWordNeighbours) {
    AddedToken w = token(1, "[W]");
    w.single_word = true;
    AddedTokenMatcher m({w});
    EXPECT_EQ(pieces(m, "a [W] b"), (Pieces{"a ", "[[W]]", " b"}));
    EXPECT_EQ(pieces(m, "[W]"), (Pieces{"[[W]]"}));
    EXPECT_EQ(pieces(m, "a[W]b"), (Pieces{"a[W]b"}));
    EXPECT_EQ(pieces(m, "_[W]"), (Pieces{"_[W]"}));
    EXPECT_EQ(pieces(m, "\xC3\xA9[W]"), (Pieces{"\xC3\xA9[W]"}));  // é is a word character
    EXPECT_EQ(pieces(m, "[W]."), (Pieces{"[[W]]", "."}));
}

TEST(AddedTokenMatcherTest, StripSwallowsNeighbouringWhitespace) {
    AddedToken mask = token(1, "<m>");
    mask.lstrip = true;
    mask.rstrip = true;
    AddedTokenMatcher m({mask});
    EXPECT_EQ(pieces(m, "a  <m>b"), (Pieces{"a", "[  <m>]", "b"}));
    EXPECT_EQ(pieces(m, "a<m>  b"), (Pieces{"a", "[<m>  ]", "b"}));
    EXPECT_EQ(pieces(m, "<m> <m>"), (Pieces{"[<m> ]", "[<m>]"}));
    EXPECT_EQ(pieces(m, " <m>  <m>  "), (Pieces{"[ <m>  ]", "[<m>  ]"}));
    // Unicode whitespace counts (U+3000), as Rust's \s does.
    EXPECT_EQ(pieces(m, "x\xE3\x80\x80<m>"), (Pieces{"x", "[\xE3\x80\x80<m>]"}));
}

TEST(AddedTokenMatcherTest, EmptyContentNeverMatches) {
    AddedTokenMatcher m({token(1, ""), token(2, "x")});
    EXPECT_EQ(pieces(m, "axb"), (Pieces{"a", "[x]", "b"}));
}

}  // namespace
}  // namespace se
