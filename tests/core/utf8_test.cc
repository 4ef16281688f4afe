#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace se {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, NextStepDecodesWellFormedCharacters) {
    const std::string text = "a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80";  // a é 你 😀
    utf8::Step s = utf8::next_step(text, 0);
    EXPECT_EQ(s.kind, utf8::StepKind::kChar);
    EXPECT_EQ(s.cp, U'a');
    s = utf8::next_step(text, 1);
    EXPECT_EQ(s.len, 2);
    EXPECT_EQ(s.cp, 0xE9u);
    s = utf8::next_step(text, 3);
    EXPECT_EQ(s.len, 3);
    EXPECT_EQ(s.cp, 0x4F60u);
    s = utf8::next_step(text, 6);
    EXPECT_EQ(s.len, 4);
    EXPECT_EQ(s.cp, 0x1F600u);
}

TEST(Utf8Test, NextStepReportsMaximalSubparts) {
    EXPECT_EQ(utf8::next_step("\xFF", 0).kind, utf8::StepKind::kInvalid);
    EXPECT_EQ(utf8::next_step("\xC0\xAF", 0).len, 1);  // C0 can never start a character
    const utf8::Step surrogate = utf8::next_step("\xED\xA0\x80", 0);
    EXPECT_EQ(surrogate.kind, utf8::StepKind::kInvalid);
    EXPECT_EQ(surrogate.len, 1);  // A0 cannot follow ED
    const utf8::Step broken = utf8::next_step("\xE2\x82(", 0);
    EXPECT_EQ(broken.kind, utf8::StepKind::kInvalid);
    EXPECT_EQ(broken.len, 2);
    const utf8::Step truncated = utf8::next_step("\xF0\x9F\x98", 0);
    EXPECT_EQ(truncated.kind, utf8::StepKind::kTruncated);
    EXPECT_EQ(truncated.len, 3);
}

// Expected strings are Python's bytes.decode("utf-8", errors="replace").
TEST(Utf8Test, ToValidMatchesPythonReplace) {
    EXPECT_EQ(utf8::to_valid("\xFF"), kFffd);
    EXPECT_EQ(utf8::to_valid("\xE2\x82"), kFffd);
    EXPECT_EQ(utf8::to_valid("\xE2\x82 end"), kFffd + " end");
    EXPECT_EQ(utf8::to_valid("\xED\xA0\x80"), kFffd + kFffd + kFffd);
    EXPECT_EQ(utf8::to_valid("\xC0\xAF"), kFffd + kFffd);
    EXPECT_EQ(utf8::to_valid("\xF0\x9F\x98"), kFffd);
    EXPECT_EQ(utf8::to_valid("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
    EXPECT_EQ(utf8::to_valid("\xE0\x80\xAF"), kFffd + kFffd + kFffd);
    EXPECT_EQ(utf8::to_valid("\xF0\x9F\x98\x80\xF0\x9F"), "\xF0\x9F\x98\x80" + kFffd);
    EXPECT_EQ(utf8::to_valid("\xE2(\xA1"), kFffd + "(" + kFffd);
    EXPECT_EQ(utf8::to_valid(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Utf8Test, IsValid) {
    EXPECT_TRUE(utf8::is_valid(""));
    EXPECT_TRUE(utf8::is_valid("plain ascii"));
    EXPECT_TRUE(utf8::is_valid("\xF4\x8F\xBF\xBF"));  // U+10FFFF
    EXPECT_FALSE(utf8::is_valid("\xF4\x90\x80\x80"));
    EXPECT_FALSE(utf8::is_valid("\xED\xBF\xBF"));  // a surrogate
    EXPECT_FALSE(utf8::is_valid("ok\xC3"));
}

TEST(Utf8Test, CompletePrefixHoldsBackOnlyATruncatedTail) {
    std::string out;
    EXPECT_EQ(utf8::append_complete_prefix("ab\xF0\x9F", out), 2u);
    EXPECT_EQ(out, "ab");
    out.clear();
    // An invalid byte is decided at once, even at the end.
    EXPECT_EQ(utf8::append_complete_prefix("ab\xFF", out), 3u);
    EXPECT_EQ(out, "ab" + kFffd);
    out.clear();
    // A truncated character followed by more bytes is invalid, not pending.
    EXPECT_EQ(utf8::append_complete_prefix("\xF0\x9F"
                                           "a\xE2",
                                           out),
              3u);
    EXPECT_EQ(out, kFffd + "a");
}

TEST(Utf8Test, AppendEncodesEveryLength) {
    std::string out;
    for (char32_t cp : {U'A', char32_t{0xE9}, char32_t{0x4F60}, char32_t{0x1F600}})
        utf8::append(cp, out);
    EXPECT_EQ(out, "A\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80");
    EXPECT_EQ(utf8::decode_at(out, 6), 0x1F600u);
}

}  // namespace
}  // namespace se
