// Python str algorithms on UTF-8 text.
#include "tokenizer/chat_template/py_string.h"

#include <gtest/gtest.h>

namespace se::jinja {
namespace {

using Parts = std::vector<std::string>;

Parts split(std::string_view text, std::optional<std::string_view> sep, int64_t maxsplit = -1,
            Direction direction = Direction::kFromLeft) {
    auto parts = py_split(text, sep, maxsplit, direction);
    EXPECT_TRUE(parts.ok());
    return parts.ok() ? *parts : Parts{};
}

TEST(PyStringTest, StripUsesUnicodeWhitespaceOrGivenChars) {
    EXPECT_EQ(py_strip(" \u3000\u00a0x y\t\n", std::nullopt, StripSide::kBoth), "x y");
    EXPECT_EQ(py_strip("\n\nx\n", "\n", StripSide::kLeft), "x\n");
    EXPECT_EQ(py_strip("x\u00e9\u00e9", "\u00e9", StripSide::kRight), "x");
}

TEST(PyStringTest, Split) {
    EXPECT_EQ(split("a b  c", std::nullopt), (Parts{"a", "b", "c"}));
    EXPECT_EQ(split("  a  b  ", std::nullopt, 1), (Parts{"a", "b  "}));
    EXPECT_EQ(split("  a  b  ", std::nullopt, 1, Direction::kFromRight), (Parts{"  a", "b"}));
    EXPECT_EQ(split("a,b,,c", ","), (Parts{"a", "b", "", "c"}));
    EXPECT_EQ(split("a,b,c", ",", 1, Direction::kFromRight), (Parts{"a,b", "c"}));
    EXPECT_EQ(split("", ","), (Parts{""}));
    EXPECT_EQ(split("", std::nullopt), (Parts{}));
    EXPECT_FALSE(py_split("x", "", -1, Direction::kFromLeft).ok());
}

TEST(PyStringTest, Splitlines) {
    EXPECT_EQ(py_splitlines("a\nb\r\nc\u2028d", LineEnds::kDrop), (Parts{"a", "b", "c", "d"}));
    EXPECT_EQ(py_splitlines("a\n", LineEnds::kKeep), (Parts{"a\n"}));
}

TEST(PyStringTest, ReplaceFindCount) {
    EXPECT_EQ(py_replace("aaa", "a", "b", 2), "bba");
    EXPECT_EQ(py_replace("ab", "", "-", -1), "-a-b-");
    EXPECT_EQ(py_find("h\u00e9llo", "l", Direction::kFromLeft), 2);  // code points, not bytes
    EXPECT_EQ(py_find("h\u00e9llo", "l", Direction::kFromRight), 3);
    EXPECT_EQ(py_find("abc", "z", Direction::kFromLeft), -1);
    EXPECT_EQ(py_count("aaaa", "aa"), 2);
    EXPECT_EQ(py_count("ab", ""), 3);
}

TEST(PyStringTest, CaseMappings) {
    EXPECT_EQ(py_title("they're bill's 1st"), "They'Re Bill'S 1St");
    EXPECT_EQ(jinja_title("they're bill's a-b"), "They're Bill's A-B");
    EXPECT_EQ(py_capitalize("hELLO w\u00d6rld"), "Hello w\u00f6rld");
    EXPECT_EQ(html_escape("<a href=\"x\">'&'"), "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;");
}

}  // namespace
}  // namespace se::jinja
