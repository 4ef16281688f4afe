// Every task's samples: reproducible from the seed, varied across seeds, needles present once at
// their depth, the expected answer recoverable from the prompt, and the context length hit.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "char_counter.h"
#include "eval/multikey_task.h"
#include "eval/sample_set.h"
#include "eval/scorer.h"
#include "eval/task_registry.h"
#include "eval/vartrack_task.h"

namespace se::eval {
namespace {

size_t count_occurrences(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

std::vector<EvalSample> samples_of(std::string_view task, uint64_t seed, int32_t num_samples,
                                   int32_t context_len = 1024) {
    const testing::CharCounter counter(4);
    const EvalTask t = select_tasks(task).value()[0];
    auto samples = make_samples(
        t, {.seed = seed, .num_samples = num_samples, .context_len = context_len}, counter);
    SE_CHECK(samples.ok(), "%s", samples.status().to_string().c_str());
    return std::move(samples).value();
}

// The lines of the prompt that are not filler: the needles, in prompt order.
std::vector<std::string> needle_lines(const EvalSample& s) {
    std::vector<std::string> lines;
    const std::string& text = s.prompt.user;
    for (size_t begin = 0; begin < text.size();) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(begin, end - begin);
        const bool filler = line.rfind("The grass", 0) == 0 || line.rfind("The sky", 0) == 0 ||
                            line.rfind("The sun", 0) == 0 || line.rfind("Here we", 0) == 0 ||
                            line.rfind("There and", 0) == 0;
        if (!line.empty() && !filler) lines.push_back(line);
        begin = end + 1;
    }
    // First the instruction, last the question.
    return {lines.begin() + 1, lines.end() - 1};
}

class EveryTaskTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryTaskTest, SameSeedSamePrompts) {
    const auto a = samples_of(GetParam(), 7, 4);
    const auto b = samples_of(GetParam(), 7, 4);
    ASSERT_EQ(a.size(), 4u);
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].prompt.user, b[i].prompt.user);
        EXPECT_EQ(a[i].prompt.answer_prefix, b[i].prompt.answer_prefix);
        EXPECT_EQ(a[i].expected, b[i].expected);
        EXPECT_EQ(a[i].depths, b[i].depths);
        EXPECT_EQ(a[i].index, static_cast<int32_t>(i));
        EXPECT_EQ(a[i].task, GetParam());
    }
    // A sample does not depend on how many others the run asks for.
    EXPECT_EQ(samples_of(GetParam(), 7, 1)[0].prompt.user, a[0].prompt.user);
}

TEST_P(EveryTaskTest, DifferentSeedsAndIndicesDiffer) {
    const auto a = samples_of(GetParam(), 1, 8);
    const auto b = samples_of(GetParam(), 2, 8);
    std::set<std::vector<std::string>> answers;
    std::set<double> depths;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_NE(a[i].expected, b[i].expected) << i;
        EXPECT_NE(a[i].depths, b[i].depths) << i;
        EXPECT_NE(a[i].prompt.user, b[i].prompt.user) << i;
        answers.insert(a[i].expected);
        depths.insert(a[i].depths[0]);
    }
    EXPECT_EQ(answers.size(), a.size()) << "samples of one run differ from each other";
    EXPECT_EQ(depths.size(), a.size());
}

TEST_P(EveryTaskTest, NeedlesAppearOnceAtTheirDepth) {
    for (const EvalSample& s : samples_of(GetParam(), 3, 6, 2048)) {
        const std::vector<std::string> lines = needle_lines(s);
        ASSERT_EQ(lines.size(), s.depths.size()) << s.prompt.user;
        const size_t begin = s.prompt.user.find("\n\n") + 2;
        const size_t end = s.prompt.user.rfind("\n\n");
        for (size_t i = 0; i < lines.size(); ++i) {
            EXPECT_EQ(count_occurrences(s.prompt.user, lines[i]), 1u) << lines[i];
            const double at = double(s.prompt.user.find(lines[i]) - begin) / double(end - begin);
            // Depth counts filler sentences; earlier needles shift the characters a little.
            EXPECT_NEAR(at, s.depths[i], 0.05) << lines[i];
        }
        for (size_t i = 1; i < s.depths.size(); ++i) EXPECT_LE(s.depths[i - 1], s.depths[i]);
        for (const std::string& e : s.expected) {
            EXPECT_NE(s.prompt.user.find(e), std::string::npos) << e;
            EXPECT_EQ(s.prompt.answer_prefix.find(e), std::string::npos) << "answer given away";
        }
    }
}

TEST_P(EveryTaskTest, HitsTheContextLength) {
    for (int32_t context_len : {1024, 4096}) {
        for (const EvalSample& s : samples_of(GetParam(), 5, 3, context_len)) {
            EXPECT_LE(s.num_prompt_tokens, context_len);
            EXPECT_GE(s.num_prompt_tokens, context_len * 0.98);
            EXPECT_EQ(s.num_prompt_tokens, testing::CharCounter(4).count_tokens(s.prompt).value());
        }
    }
}

TEST_P(EveryTaskTest, ScorerAcceptsTheExpectedAnswerOnly) {
    for (const EvalSample& s : samples_of(GetParam(), 11, 4)) {
        std::string right;
        for (const std::string& e : s.expected) right += " " + e + ",";
        EXPECT_TRUE(is_correct(s.expected, right)) << right;
        EXPECT_FALSE(is_correct(s.expected, " I do not know.")) << s.prompt.user;
    }
}

INSTANTIATE_TEST_SUITE_P(Tasks, EveryTaskTest,
                         ::testing::Values("passkey", "needle", "multikey", "vartrack"));

TEST(PasskeyTest, NeedleAndQuestion) {
    const EvalSample s = samples_of("passkey", 0, 1)[0];
    ASSERT_EQ(s.expected.size(), 1u);
    const std::string& key = s.expected[0];
    EXPECT_TRUE(std::regex_match(key, std::regex("[1-9][0-9]{4}"))) << key;
    EXPECT_EQ(needle_lines(s),
              std::vector<std::string>{"The pass key is " + key + ". Remember it. " + key +
                                       " is the pass key."});
    EXPECT_NE(s.prompt.user.find("What is the pass key?"), std::string::npos);
    EXPECT_EQ(s.prompt.answer_prefix, "The pass key is:");
}

TEST(NeedleTest, AsksForTheNeedlesKey) {
    const EvalSample s = samples_of("needle", 0, 1)[0];
    const std::vector<std::string> lines = needle_lines(s);
    ASSERT_EQ(lines.size(), 1u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[0], m,
                                 std::regex("One of the special magic numbers for ([a-z]+-[a-z]+) "
                                            "is: ([1-9][0-9]{6})\\.")))
        << lines[0];
    EXPECT_EQ(s.expected, std::vector<std::string>{m[2]});
    EXPECT_NE(s.prompt.user.find("special magic number for " + m[1].str() + "?"),
              std::string::npos);
    EXPECT_NE(s.prompt.answer_prefix.find(m[1].str()), std::string::npos);
}

TEST(MultikeyTest, DistinctKeysAndTheAskedOneAnswers) {
    std::set<std::string> asked_positions;
    for (const EvalSample& s : samples_of("multikey", 4, 12)) {
        const std::vector<std::string> lines = needle_lines(s);
        ASSERT_EQ(lines.size(), static_cast<size_t>(kNumMultikeyNeedles));
        std::set<std::string> keys, values;
        std::string asked;
        for (size_t i = 0; i < lines.size(); ++i) {
            std::smatch m;
            ASSERT_TRUE(std::regex_match(
                lines[i], m,
                std::regex("One of the special magic numbers for (\\S+) is: (\\d+)\\.")));
            keys.insert(m[1]);
            values.insert(m[2]);
            if (s.prompt.user.find("number for " + m[1].str() + "?") != std::string::npos) {
                EXPECT_TRUE(asked.empty()) << "one key asked";
                asked = m[1];
                EXPECT_EQ(s.expected, std::vector<std::string>{m[2]});
                EXPECT_EQ(s.prompt.answer_prefix,
                          "One of the special magic numbers for " + asked + " is:");
                asked_positions.insert(std::to_string(i));
            }
        }
        EXPECT_FALSE(asked.empty());
        EXPECT_EQ(keys.size(), lines.size());
        EXPECT_EQ(values.size(), lines.size());
        // The distractors' numbers are wrong answers.
        for (const std::string& v : values) {
            if (v != s.expected[0]) {
                EXPECT_FALSE(is_correct(s.expected, "The number is " + v));
            }
        }
    }
    EXPECT_GT(asked_positions.size(), 1u) << "the asked needle is not always in one place";
}

TEST(VartrackTest, ChainFromValueThroughEveryName) {
    for (const EvalSample& s : samples_of("vartrack", 9, 5)) {
        const std::vector<std::string> lines = needle_lines(s);
        ASSERT_EQ(lines.size(), static_cast<size_t>(kNumVartrackHops + 1));
        ASSERT_EQ(s.expected.size(), lines.size());
        std::smatch m;
        ASSERT_TRUE(std::regex_match(lines[0], m, std::regex("VAR ([A-Z]{5}) = ([1-9][0-9]{4})")));
        EXPECT_EQ(m[1], s.expected[0]);
        const std::string value = m[2];
        EXPECT_NE(s.prompt.user.find("assigned the value " + value), std::string::npos);
        for (size_t i = 1; i < lines.size(); ++i) {
            EXPECT_EQ(lines[i], "VAR " + s.expected[i] + " = " + s.expected[i - 1]);
        }
    }
}

TEST(TaskRegistryTest, AllAndUnknown) {
    auto all = select_tasks("all");
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 4u);
    EXPECT_EQ((*all)[0].name, "passkey");
    EXPECT_EQ((*all)[3].name, "vartrack");
    auto bad = select_tasks("haystack");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("'haystack'"), std::string::npos);
    EXPECT_NE(bad.status().message().find("vartrack"), std::string::npos);
}

TEST(SampleSetTest, ContextTooShortForThePromptIsAnError) {
    const testing::CharCounter counter(4);
    auto samples = make_samples(select_tasks("vartrack").value()[0],
                                {.seed = 0, .num_samples = 1, .context_len = 32}, counter);
    ASSERT_FALSE(samples.ok());
    EXPECT_EQ(samples.status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace se::eval
