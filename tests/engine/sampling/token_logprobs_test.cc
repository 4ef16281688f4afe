#include "engine/sampling/token_logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/sampling/sampling_rng.h"

namespace se {
namespace {

double naive_log_sum_exp(const std::vector<float>& logits) {
    double max_logit = -INFINITY;
    for (const float l : logits) max_logit = std::max<double>(max_logit, l);
    double sum = 0.0;
    for (const float l : logits) sum += std::exp(l - max_logit);
    return max_logit + std::log(sum);
}

TEST(TokenLogprobsTest, LogSumExpMatchesTwoPassReference) {
    SamplingRng rng(5);
    std::vector<float> logits(50000);
    for (float& l : logits) l = static_cast<float>(rng.next_double() * 60.0 - 30.0);
    EXPECT_NEAR(log_sum_exp(logits), naive_log_sum_exp(logits), 1e-4);
    // Increasing logits force a rescale on every element.
    std::vector<float> rising;
    for (int i = 0; i < 1000; ++i) rising.push_back(static_cast<float>(i) * 0.1f);
    EXPECT_NEAR(log_sum_exp(rising), naive_log_sum_exp(rising), 1e-4);
}

TEST(TokenLogprobsTest, MaskedLogitsContributeNothing) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> logits = {-inf, 0.0f, -inf, 0.0f};
    EXPECT_NEAR(log_sum_exp(logits), std::log(2.0), 1e-6);
}

TEST(TokenLogprobsTest, TopListIsLogSoftmaxDescendingWithTiesToLowerIds) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 2.0f};
    const double lse = naive_log_sum_exp(logits);
    const SampledLogprobs out = compute_sampled_logprobs(logits, 4, 4);
    ASSERT_EQ(out.num_top, 4);
    const std::vector<int32_t> expected_order = {1, 3, 2, 5};
    for (int32_t i = 0; i < out.num_top; ++i) {
        const TokenLogprob& entry = out.top_logprobs()[i];
        EXPECT_EQ(entry.token, expected_order[i]);
        EXPECT_NEAR(entry.logprob, logits[entry.token] - lse, 1e-6);
    }
    EXPECT_NEAR(out.logprob, -1.0 - lse, 1e-6);
    EXPECT_EQ(out.rank, 6);
}

TEST(TokenLogprobsTest, RankCountsBetterTokensAndEqualOnesWithLowerIds) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    EXPECT_EQ(compute_sampled_logprobs(logits, 1, 0).rank, 1);
    EXPECT_EQ(compute_sampled_logprobs(logits, 3, 0).rank, 2);
    EXPECT_EQ(compute_sampled_logprobs(logits, 2, 0).rank, 3);
    EXPECT_EQ(compute_sampled_logprobs(logits, 0, 0).num_top, 0);
}

TEST(TokenLogprobsTest, TopListHandlesVocabSmallerThanN) {
    const std::vector<float> logits = {0.0f, 1.0f};
    const SampledLogprobs out = compute_sampled_logprobs(logits, 0, kMaxLogprobs);
    ASSERT_EQ(out.num_top, 2);
    EXPECT_EQ(out.top_logprobs()[0].token, 1);
    EXPECT_EQ(out.top_logprobs()[1].token, 0);
}

}  // namespace
}  // namespace se
