#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace se {
namespace {

std::vector<std::string> matches(const Regex& re, std::string_view text) {
    std::vector<ByteRange> ranges;
    EXPECT_TRUE(re.find_all(text, ranges).ok());
    std::vector<std::string> out;
    for (const ByteRange& r : ranges) out.emplace_back(text.substr(r.begin, r.end - r.begin));
    return out;
}

TEST(RegexTest, Llama3PatternSplitsLikeHf) {
    auto re = Regex::compile(kLlama3SplitPattern, "test");
    ASSERT_TRUE(re.ok()) << re.status().to_string();
    // \s+(?!\S) leaves the last space of a run to the word that follows.
    EXPECT_EQ(matches(*re, "Hello   world"), (std::vector<std::string>{"Hello", "  ", " world"}));
    EXPECT_EQ(matches(*re, "I'M 12345"), (std::vector<std::string>{"I", "'M", " ", "123", "45"}));
    EXPECT_EQ(matches(*re, "a\r\n\r\nb"), (std::vector<std::string>{"a", "\r\n\r\n", "b"}));
    EXPECT_EQ(matches(*re, "x  "), (std::vector<std::string>{"x", "  "}));
}

TEST(RegexTest, UnicodePropertiesNeedUcp) {
    auto re = Regex::compile(R"(\p{L}+|\s+)", "test");
    ASSERT_TRUE(re.ok());
    // U+3000 is a space only under Unicode rules; é and 你 are letters.
    EXPECT_EQ(matches(*re, "caf\xC3\xA9\xE3\x80\x80\xE4\xBD\xA0"),
              (std::vector<std::string>{"caf\xC3\xA9", "\xE3\x80\x80", "\xE4\xBD\xA0"}));
}

TEST(RegexTest, EmptyMatchRightAfterAMatchIsSkipped) {
    auto re = Regex::compile("a*", "test");
    ASSERT_TRUE(re.ok());
    // As the onig crate's find_iter: "aa" at 0; the empty match at 2 touches it and is
    // skipped; the empty match at the end (3) is kept, once.
    std::vector<ByteRange> ranges;
    ASSERT_TRUE(re->find_all("aab", ranges).ok());
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0].begin, 0u);
    EXPECT_EQ(ranges[0].end, 2u);
    EXPECT_EQ(ranges[1].begin, 3u);
    EXPECT_EQ(ranges[1].end, 3u);
}

TEST(RegexTest, CompileErrorNamesPatternAndOrigin) {
    auto re = Regex::compile("(unclosed", "pre_tokenizer.pattern.Regex");
    ASSERT_FALSE(re.ok());
    EXPECT_EQ(re.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(re.status().message().find("pre_tokenizer.pattern.Regex"), std::string::npos);
    EXPECT_NE(re.status().message().find("(unclosed"), std::string::npos);
}

TEST(RegexTest, LongWhitespaceRunIsOneMatch) {
    auto re = Regex::compile(kQwen2SplitPattern, "test");
    ASSERT_TRUE(re.ok());
    const std::string text = std::string(200000, ' ') + "x";
    std::vector<ByteRange> ranges;
    ASSERT_TRUE(re->find_all(text, ranges).ok());
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0].end, 199999u);
    EXPECT_EQ(ranges[1].begin, 199999u);
}

}  // namespace
}  // namespace se
