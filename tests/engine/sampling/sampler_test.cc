#include "engine/sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <vector>

namespace se {
namespace {

constexpr int32_t kEos = 2;

Sampler make_sampler(SamplingParams params, uint64_t seed_if_unset = 0) {
    return Sampler(std::move(params),
                   SamplerOptions{.eos_token_ids = {kEos}, .seed_if_unset = seed_if_unset});
}

int32_t sample_once(Sampler& sampler, const std::vector<float>& logits,
                    const std::vector<int32_t>& prompt = {},
                    const std::vector<int32_t>& output = {}) {
    std::vector<float> work = logits;
    return sampler.sample(work, prompt, output).token;
}

std::map<int32_t, int> histogram(Sampler& sampler, const std::vector<float>& logits, int draws) {
    std::map<int32_t, int> counts;
    for (int i = 0; i < draws; ++i) ++counts[sample_once(sampler, logits)];
    return counts;
}

std::set<int32_t> support(Sampler& sampler, const std::vector<float>& logits) {
    std::set<int32_t> tokens;
    for (const auto& [token, count] : histogram(sampler, logits, 4000)) tokens.insert(token);
    return tokens;
}

std::vector<float> random_logits(size_t vocab, uint64_t seed) {
    SamplingRng rng(seed);
    std::vector<float> logits(vocab);
    for (float& l : logits) l = static_cast<float>(rng.next_double() * 8.0);
    return logits;
}

TEST(SamplerTest, GreedyTakesArgmaxWithTiesToLowerId) {
    Sampler sampler = make_sampler({.temperature = 0.0f});
    EXPECT_EQ(sample_once(sampler, {1.0f, 3.0f, 3.0f, 2.0f}), 1);
    EXPECT_EQ(sample_once(sampler, {5.0f, 3.0f, 5.0f}), 0);
    EXPECT_EQ(argmax_lowest_id(std::vector<float>{-1.0f, std::nanf(""), -0.5f}), 2);
}

TEST(SamplerTest, GreedyIgnoresTruncationKnobs) {
    Sampler sampler = make_sampler({.temperature = 1e-6f, .top_p = 0.1f, .top_k = 1});
    for (int i = 0; i < 10; ++i) EXPECT_EQ(sample_once(sampler, {0.0f, 0.5f, 0.4f}), 1);
}

TEST(SamplerTest, SeededSamplingIsReproducibleAndSeedsDiffer) {
    const std::vector<float> logits = random_logits(1000, 9);
    auto draw_sequence = [&](Sampler sampler) {
        std::vector<int32_t> tokens;
        for (int i = 0; i < 200; ++i) tokens.push_back(sample_once(sampler, logits));
        return tokens;
    };
    const auto a = draw_sequence(make_sampler({.seed = 42}));
    EXPECT_EQ(a, draw_sequence(make_sampler({.seed = 42}, /*seed_if_unset=*/7)));
    EXPECT_NE(a, draw_sequence(make_sampler({.seed = 43})));
    // Without params.seed the engine-provided seed decides.
    EXPECT_EQ(a, draw_sequence(make_sampler({}, 42)));
    EXPECT_NE(a, draw_sequence(make_sampler({}, 41)));
}

TEST(SamplerTest, EmpiricalDistributionMatchesSoftmax) {
    const std::vector<float> logits = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f};
    const float temperature = 0.7f;
    Sampler sampler = make_sampler({.temperature = temperature, .seed = 1234});
    constexpr int kDraws = 200000;
    const std::map<int32_t, int> counts = histogram(sampler, logits, kDraws);
    double total = 0.0;
    for (const float l : logits) total += std::exp(l / temperature);
    for (size_t t = 0; t < logits.size(); ++t) {
        const double p = std::exp(logits[t] / temperature) / total;
        const auto it = counts.find(static_cast<int32_t>(t));
        const int count = it == counts.end() ? 0 : it->second;
        // Binomial count: 5 standard deviations.
        EXPECT_NEAR(count, p * kDraws, 5.0 * std::sqrt(kDraws * p * (1.0 - p))) << "token " << t;
    }
}

TEST(SamplerTest, TruncatedDistributionIsRenormalised) {
    // Probabilities 0.05, 0.4, 0.1, 0.3, 0.15; top-k 3 keeps 0.4, 0.3, 0.15 out of 0.85.
    const std::vector<float> logits = {std::log(0.05f), std::log(0.4f), std::log(0.1f),
                                       std::log(0.3f), std::log(0.15f)};
    Sampler sampler = make_sampler({.top_k = 3, .seed = 99});
    constexpr int kDraws = 100000;
    std::map<int32_t, int> counts = histogram(sampler, logits, kDraws);
    EXPECT_EQ(counts.size(), 3u);
    for (const auto& [token, p] : std::map<int32_t, double>{{1, 0.4}, {3, 0.3}, {4, 0.15}}) {
        const double q = p / 0.85;
        EXPECT_NEAR(counts[token], q * kDraws, 5.0 * std::sqrt(kDraws * q * (1.0 - q)));
    }
}

TEST(SamplerTest, TopKTopPMinPRestrictTheSupport) {
    // Probabilities 0.05, 0.4, 0.1, 0.3, 0.15 (at temperature 1).
    const std::vector<float> logits = {std::log(0.05f), std::log(0.4f), std::log(0.1f),
                                       std::log(0.3f), std::log(0.15f)};
    Sampler top_k = make_sampler({.top_k = 3, .seed = 1});
    EXPECT_EQ(support(top_k, logits), (std::set<int32_t>{1, 3, 4}));
    Sampler top_p = make_sampler({.top_p = 0.75f, .seed = 2});
    EXPECT_EQ(support(top_p, logits), (std::set<int32_t>{1, 3, 4}));
    Sampler min_p = make_sampler({.min_p = 0.3f, .seed = 3});  // keeps p >= 0.12
    EXPECT_EQ(support(min_p, logits), (std::set<int32_t>{1, 3, 4}));
    Sampler all = make_sampler({.top_k = -1, .seed = 4});
    EXPECT_EQ(support(all, logits), (std::set<int32_t>{0, 1, 2, 3, 4}));
    // top-k 3 then top-p 0.6 of the renormalised {0.47, 0.35, 0.18} then min-p.
    Sampler combined = make_sampler({.top_p = 0.6f, .top_k = 3, .seed = 5});
    EXPECT_EQ(support(combined, logits), (std::set<int32_t>{1, 3}));
    Sampler combined_min_p = make_sampler({.top_p = 0.6f, .top_k = 3, .min_p = 0.8f, .seed = 6});
    EXPECT_EQ(support(combined_min_p, logits), (std::set<int32_t>{1}));
}

TEST(SamplerTest, LogitBiasShiftsTheChoice) {
    Sampler sampler = make_sampler({.temperature = 0.0f, .logit_bias = {{0, 2.5f}, {1, -1.0f}}});
    std::vector<float> logits = {0.0f, 2.0f, 1.0f};
    EXPECT_EQ(sampler.sample(logits, {}, {}).token, 0);
    EXPECT_EQ(logits, (std::vector<float>{2.5f, 1.0f, 1.0f}));
}

TEST(SamplerTest, MinTokensMasksEosAndStopTokensUntilReached) {
    const std::vector<float> logits = {0.0f, 1.0f, 9.0f, 8.0f, 2.0f};  // EOS (2) leads, then 3
    Sampler sampler = make_sampler({.temperature = 0.0f, .min_tokens = 2, .stop_token_ids = {3}});
    EXPECT_EQ(sample_once(sampler, logits, {}, {}), 4);
    EXPECT_EQ(sample_once(sampler, logits, {}, {4}), 4);
    EXPECT_EQ(sample_once(sampler, logits, {}, {4, 4}), kEos);
    // With ignore_eos the EOS token is ordinary text and stays available.
    Sampler ignoring = make_sampler({.temperature = 0.0f, .min_tokens = 2, .ignore_eos = true});
    EXPECT_EQ(sample_once(ignoring, logits, {}, {}), kEos);
    // Random sampling never draws a masked token either.
    Sampler random = make_sampler({.seed = 8, .min_tokens = 1});
    EXPECT_EQ(support(random, {0.0f, 0.0f, 3.0f, 0.0f}), (std::set<int32_t>{0, 1, 3}));
}

TEST(SamplerTest, PenaltiesMatchHandComputedLogits) {
    Sampler sampler = make_sampler({.temperature = 0.0f,
                                    .presence_penalty = 0.5f,
                                    .frequency_penalty = 0.25f,
                                    .repetition_penalty = 2.0f});
    std::vector<float> logits = {4.0f, -1.0f, 3.0f, 1.0f, 0.5f};
    const std::vector<int32_t> prompt = {0, 1};
    const std::vector<int32_t> output = {3, 3, 1};
    const int32_t token = sampler.sample(logits, prompt, output).token;
    // Repetition over prompt + output: 4/2, -1*2, 1/2. Then output counts {3: 2, 1: 1}:
    // token 3: 0.5 - 0.25*2 - 0.5; token 1: -2 - 0.25 - 0.5.
    EXPECT_EQ(logits, (std::vector<float>{2.0f, -2.75f, 3.0f, -0.5f, 0.5f}));
    EXPECT_EQ(token, 2);
}

TEST(SamplerTest, LogprobsComeFromRawLogits) {
    const std::vector<float> raw = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    Sampler sampler = make_sampler({.temperature = 0.0f,
                                    .repetition_penalty = 1.5f,
                                    .logprobs = 3,
                                    .logit_bias = {{4, 10.0f}}});
    std::vector<float> logits = raw;
    const std::vector<int32_t> prompt = {1, 3};
    const SampleResult result = sampler.sample(logits, prompt, {});
    EXPECT_EQ(result.token, 4);  // the bias wins the choice but not the reported logprobs
    ASSERT_TRUE(result.logprobs.has_value());
    double sum = 0.0;
    for (const float l : raw) sum += std::exp(l);
    const double lse = std::log(sum);
    EXPECT_NEAR(result.logprobs->logprob, -1.0 - lse, 1e-5);
    EXPECT_EQ(result.logprobs->rank, 5);
    ASSERT_EQ(result.logprobs->num_top, 3);
    const std::vector<int32_t> expected_top = {1, 3, 2};
    for (int i = 0; i < 3; ++i) {
        const TokenLogprob& entry = result.logprobs->top_logprobs()[i];
        EXPECT_EQ(entry.token, expected_top[i]);
        EXPECT_NEAR(entry.logprob, raw[entry.token] - lse, 1e-5);
    }
}

TEST(SamplerTest, LogprobsOnlyWhenRequested) {
    const std::vector<float> raw = {0.0f, 1.0f};
    Sampler none = make_sampler({.seed = 1});
    std::vector<float> logits = raw;
    EXPECT_FALSE(none.sample(logits, {}, {}).logprobs.has_value());
    Sampler sampled_only = make_sampler({.temperature = 2.0f, .seed = 1, .logprobs = 0});
    logits = raw;
    const SampleResult result = sampled_only.sample(logits, {}, {});
    ASSERT_TRUE(result.logprobs.has_value());
    EXPECT_EQ(result.logprobs->num_top, 0);
    EXPECT_NEAR(result.logprobs->logprob,
                raw[result.token] - std::log(std::exp(0.0) + std::exp(1.0)), 1e-6);
}

TEST(SamplerTest, LargeVocabularyDrawsFromTheTruncatedSet) {
    constexpr size_t kVocab = 151936;
    const std::vector<float> logits = random_logits(kVocab, 77);
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + 49, sorted.end(), std::greater<>());
    const float fiftieth = sorted[49];
    Sampler sampler = make_sampler({.temperature = 0.8f, .top_p = 0.9f, .top_k = 50, .seed = 3});
    std::vector<float> work;
    for (int i = 0; i < 50; ++i) {
        work = logits;
        const int32_t token = sampler.sample(work, {}, {}).token;
        EXPECT_GE(logits[token], fiftieth);
    }
}

}  // namespace
}  // namespace se
