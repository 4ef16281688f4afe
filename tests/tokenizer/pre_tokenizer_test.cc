// Expected pieces are what HF tokenizers' pre_tokenize_str returns for the same configuration
// (before the byte-level mapping, which this implementation leaves to the BPE model).
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace se {
namespace {

using Words = std::vector<std::string>;

Words split(std::vector<PreTokenizerStep> steps, std::string_view text) {
    PreTokenizer pre(std::move(steps));
    PreTokens tokens;
    const Status status = pre.split(text, tokens);
    EXPECT_TRUE(status.ok()) << status.to_string();
    return Words(tokens.words.begin(), tokens.words.end());
}

SplitStep literal(std::string text, SplitBehavior behavior, bool invert = false) {
    SplitStep step;
    step.literal = std::move(text);
    step.behavior = behavior;
    step.invert = invert;
    return step;
}

SplitStep regex(std::string_view pattern, SplitBehavior behavior, bool invert = false) {
    SplitStep step;
    step.regex = Regex::compile(pattern, "test").value();
    step.behavior = behavior;
    step.invert = invert;
    return step;
}

ByteLevelStep byte_level(bool add_prefix_space, bool use_regex) {
    return make_byte_level_step(add_prefix_space, use_regex).value();
}

TEST(PreTokenizerTest, SplitBehaviors) {
    const std::string text = "the-final--countdown";
    EXPECT_EQ(split({literal("-", SplitBehavior::kRemoved)}, text),
              (Words{"the", "final", "countdown"}));
    EXPECT_EQ(split({literal("-", SplitBehavior::kIsolated)}, text),
              (Words{"the", "-", "final", "-", "-", "countdown"}));
    EXPECT_EQ(split({literal("-", SplitBehavior::kMergedWithPrevious)}, text),
              (Words{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(split({literal("-", SplitBehavior::kMergedWithNext)}, text),
              (Words{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(split({literal("-", SplitBehavior::kContiguous)}, text),
              (Words{"the", "-", "final", "--", "countdown"}));
}

TEST(PreTokenizerTest, InvertedSplit) {
    const std::string text = "the-final--countdown";
    EXPECT_EQ(split({regex("-", SplitBehavior::kRemoved, true)}, text), (Words{"-", "-", "-"}));
    EXPECT_EQ(split({regex("-", SplitBehavior::kMergedWithPrevious, true)}, text),
              (Words{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(split({regex("-", SplitBehavior::kMergedWithNext, true)}, text),
              (Words{"the-", "final-", "-", "countdown"}));
}

TEST(PreTokenizerTest, EmptyMatchesTakePartInMerging) {
    EXPECT_EQ(split({regex("a*", SplitBehavior::kMergedWithPrevious)}, "aab"), (Words{"aa", "b"}));
    EXPECT_EQ(split({regex("a*", SplitBehavior::kMergedWithNext)}, "baab"), (Words{"b", "aab"}));
    EXPECT_EQ(split({regex("a*", SplitBehavior::kRemoved)}, "baab"), (Words{"b", "b"}));
}

TEST(PreTokenizerTest, DigitsUseEveryNumericCharacter) {
    // Arabic-Indic digits are Nd, ½ is No: all numeric for Rust's char::is_numeric.
    const std::string text = "Hey 123 friend4 \xD9\xA3\xD9\xA4 \xC2\xBDx";
    EXPECT_EQ(
        split({DigitsStep{.individual_digits = false}}, text),
        (Words{"Hey ", "123", " friend", "4", " ", "\xD9\xA3\xD9\xA4", " ", "\xC2\xBD", "x"}));
    EXPECT_EQ(split({DigitsStep{.individual_digits = true}}, text),
              (Words{"Hey ", "1", "2", "3", " friend", "4", " ", "\xD9\xA3", "\xD9\xA4", " ",
                     "\xC2\xBD", "x"}));
}

TEST(PreTokenizerTest, ByteLevelGpt2Regex) {
    EXPECT_EQ(split({byte_level(false, true)}, "I'm  12 \t\nx "),
              (Words{"I", "'m", " ", " 12", " \t", "\n", "x", " "}));
    EXPECT_EQ(split({byte_level(true, true)}, "Hello  world"), (Words{" Hello", " ", " world"}));
}

TEST(PreTokenizerTest, ByteLevelPrefixSpaceAppliesToEveryPiece) {
    std::vector<PreTokenizerStep> steps;
    steps.emplace_back(literal(" ", SplitBehavior::kIsolated));
    steps.emplace_back(byte_level(true, false));
    EXPECT_EQ(split(std::move(steps), "a b  c"), (Words{" a", " ", " b", " ", " ", " c"}));
}

TEST(PreTokenizerTest, EmptyTextHasNoWords) {
    EXPECT_TRUE(split({byte_level(true, true)}, "").empty());
}

}  // namespace
}  // namespace se
