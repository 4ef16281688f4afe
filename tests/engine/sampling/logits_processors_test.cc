#include "engine/sampling/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace se {
namespace {

TEST(LogitsProcessorsTest, LogitBiasAddsToListedTokens) {
    std::vector<float> logits = {1.0f, 2.0f, 3.0f};
    apply_logit_bias(logits, {{0, 0.5f}, {2, -4.0f}});
    EXPECT_EQ(logits, (std::vector<float>{1.5f, 2.0f, -1.0f}));
}

TEST(LogitsProcessorsTest, MaskSetsMinusInfinity) {
    std::vector<float> logits = {1.0f, 2.0f, 3.0f};
    const std::vector<int32_t> ids = {2, 0};
    mask_tokens(logits, ids);
    EXPECT_EQ(logits[0], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(logits[1], 2.0f);
    EXPECT_EQ(logits[2], -std::numeric_limits<float>::infinity());
}

TEST(LogitsProcessorsTest, RepetitionPenaltyDividesPositiveAndMultipliesOthersOnce) {
    PenaltyApplier penalties;
    const std::vector<int32_t> prompt = {0, 1, 0};
    const std::vector<int32_t> output = {1, 3, 3, 4};
    // Token 2 never appeared; token 4 has logit exactly 0 and stays 0 (0 * 2).
    std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f, -2.0f};
    penalties.apply_repetition(logits, 2.0f, prompt, output);
    EXPECT_EQ(logits, (std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, 0.0f, -2.0f}));
    // The scratch state is clean: a second call with no history changes nothing.
    penalties.apply_repetition(logits, 2.0f, {}, {});
    EXPECT_EQ(logits, (std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, 0.0f, -2.0f}));
}

TEST(LogitsProcessorsTest, RepetitionPenaltyBelowOneRewardsRepeats) {
    PenaltyApplier penalties;
    const std::vector<int32_t> output = {0, 1};
    std::vector<float> logits = {2.0f, -1.0f};
    penalties.apply_repetition(logits, 0.5f, {}, output);
    EXPECT_EQ(logits, (std::vector<float>{4.0f, -0.5f}));
}

TEST(LogitsProcessorsTest, FrequencyAndPresenceFollowOpenAiFormula) {
    PenaltyApplier penalties;
    const std::vector<int32_t> output = {0, 2, 2, 2};
    std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
    penalties.apply_frequency_presence(logits, 0.5f, 0.25f, output);
    // Token 0: 1 - 0.5*1 - 0.25; token 2: 1 - 0.5*3 - 0.25; tokens 1 and 3 never appeared.
    EXPECT_EQ(logits, (std::vector<float>{0.25f, 1.0f, -0.75f, 1.0f}));
    // Counts were reset: the same history penalises by the same amount again.
    penalties.apply_frequency_presence(logits, 0.5f, 0.25f, output);
    EXPECT_EQ(logits, (std::vector<float>{-0.5f, 1.0f, -2.5f, 1.0f}));
}

TEST(LogitsProcessorsTest, NegativePenaltiesEncourageRepeats) {
    PenaltyApplier penalties;
    const std::vector<int32_t> output = {1, 1};
    std::vector<float> logits = {0.0f, 0.0f};
    penalties.apply_frequency_presence(logits, -1.0f, -0.5f, output);
    EXPECT_EQ(logits, (std::vector<float>{0.0f, 2.5f}));
}

}  // namespace
}  // namespace se
