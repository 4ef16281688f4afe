// Filler sizing and needle placement, measured with a character counter.
#include "eval/haystack.h"

#include <gtest/gtest.h>

#include "char_counter.h"
#include "eval/filler.h"

namespace se::eval {
namespace {

size_t count_occurrences(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

TaskSpec one_needle(double depth) {
    return {.instruction = "Find the needle.",
            .insertions = {{"NEEDLE LINE 4242", depth}},
            .question = "What is the needle?",
            .answer_prefix = "The needle is",
            .expected = {"4242"}};
}

// Where `part` starts, as a fraction of the filler region between instruction and question.
double relative_position(const EvalPrompt& prompt, const TaskSpec& spec, const std::string& part) {
    const size_t begin = spec.instruction.size() + 2;
    const size_t end = prompt.user.rfind(spec.question);
    return double(prompt.user.find(part) - begin) / double(end - begin);
}

TEST(HaystackTest, LaysOutInstructionFillerNeedleQuestion) {
    const TaskSpec spec = one_needle(0.5);
    const EvalPrompt p = render_prompt(spec, 4);
    EXPECT_EQ(p.user,
              "Find the needle.\n\n"
              "The grass is green. The sky is blue.\n"
              "NEEDLE LINE 4242\n"
              "The sun is yellow. Here we go.\n"
              "\nWhat is the needle?");
    EXPECT_EQ(p.answer_prefix, "The needle is");
}

TEST(HaystackTest, NeedleAtEitherEnd) {
    EXPECT_EQ(render_prompt(one_needle(0.0), 1).user,
              "Find the needle.\n\nNEEDLE LINE 4242\nThe grass is green.\n\nWhat is the needle?");
    EXPECT_EQ(render_prompt(one_needle(1.0), 1).user,
              "Find the needle.\n\nThe grass is green.\nNEEDLE LINE 4242\n\nWhat is the needle?");
    EXPECT_EQ(render_prompt(one_needle(0.3), 0).user,
              "Find the needle.\n\nNEEDLE LINE 4242\n\nWhat is the needle?");
}

TEST(HaystackTest, FillerCyclesTheFiveSentences) {
    const EvalPrompt p = render_prompt(one_needle(1.0), 2 * kNumFillerSentences);
    EXPECT_EQ(count_occurrences(p.user, "The grass is green."), 2u);
    EXPECT_EQ(count_occurrences(p.user, "There and back again."), 2u);
    EXPECT_EQ(filler_sentence(kNumFillerSentences + 1), filler_sentence(1));
}

TEST(HaystackTest, InsertionsKeepTheirOrderAndDepth) {
    TaskSpec spec = one_needle(0.2);
    spec.insertions.push_back({"SECOND 1", 0.2});  // same sentence: after the first
    spec.insertions.push_back({"THIRD 2", 0.9});
    const EvalPrompt p = render_prompt(spec, 1000);
    const size_t first = p.user.find("NEEDLE LINE 4242");
    const size_t second = p.user.find("SECOND 1");
    const size_t third = p.user.find("THIRD 2");
    ASSERT_NE(third, std::string::npos);
    EXPECT_LT(first, second);
    EXPECT_LT(second, third);
    EXPECT_NEAR(relative_position(p, spec, "NEEDLE LINE 4242"), 0.2, 0.01);
    EXPECT_NEAR(relative_position(p, spec, "THIRD 2"), 0.9, 0.01);
}

TEST(HaystackTest, FitsTheTargetWithinOneSentence) {
    for (int32_t chars_per_token : {1, 4}) {
        for (int32_t target : {300, 2048, 7168}) {
            const testing::CharCounter counter(chars_per_token);
            const TaskSpec spec = one_needle(0.37);
            auto fitted = fit_prompt(spec, target, counter);
            ASSERT_TRUE(fitted.ok()) << fitted.status().to_string();
            EXPECT_LE(fitted->num_tokens, target);
            EXPECT_EQ(fitted->num_tokens, counter.count_tokens(fitted->prompt).value());
            // One more sentence would not fit.
            EXPECT_GT(counter.count_tokens(render_prompt(spec, fitted->num_sentences + 1)).value(),
                      target);
            // From 2048 tokens on, 2% of the target is more than a sentence, and sentences are
            // many enough for a character position to match the depth.
            if (target >= 2048) {
                EXPECT_GE(fitted->num_tokens, target * 0.98) << target;
                EXPECT_NEAR(relative_position(fitted->prompt, spec, "NEEDLE LINE 4242"), 0.37,
                            0.02);
            }
        }
    }
}

TEST(HaystackTest, SearchNeedsFewCounts) {
    const testing::CharCounter counter;
    ASSERT_TRUE(fit_prompt(one_needle(0.5), 7168, counter).ok());
    EXPECT_LT(counter.num_calls(), 20);
}

TEST(HaystackTest, TargetShorterThanTheBarePromptIsAnError) {
    const testing::CharCounter counter;
    auto fitted = fit_prompt(one_needle(0.5), 40, counter);
    ASSERT_FALSE(fitted.ok());
    EXPECT_EQ(fitted.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(fitted.status().message().find("40 tokens"), std::string::npos)
        << fitted.status().message();
}

}  // namespace
}  // namespace se::eval
