#include "engine/sampling/candidate_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "engine/sampling/sampling_rng.h"

namespace se {
namespace {

std::set<int32_t> tokens_of(const CandidateSet& set) {
    std::set<int32_t> tokens;
    for (const CandidateSet::Entry& e : set.entries()) tokens.insert(e.token);
    return tokens;
}

std::vector<float> log_of(const std::vector<double>& probs) {
    std::vector<float> logits;
    for (const double p : probs) logits.push_back(static_cast<float>(std::log(p)));
    return logits;
}

// Independent reference: full sort, sums in double, the rules as written in the header. Weights
// use the same float formula as CandidateSet so that no cut can move by rounding alone.
std::set<int32_t> naive_kept(const std::vector<float>& logits, float temperature, int32_t top_k,
                             float top_p, float min_p) {
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    if (top_k > 0 && static_cast<size_t>(top_k) < order.size()) order.resize(top_k);
    const float max_logit = logits[order[0]];
    std::vector<double> weights;
    for (const int32_t t : order)
        weights.push_back(std::exp((logits[t] - max_logit) * (1.0f / temperature)));
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    size_t keep = 0;
    for (double before = 0.0; keep < order.size() && before < top_p * total; ++keep)
        before += weights[keep];
    std::set<int32_t> kept;
    for (size_t i = 0; i < keep; ++i) {
        if (weights[i] >= min_p * weights[0]) kept.insert(order[i]);
    }
    return kept;
}

TEST(CandidateSetTest, SkipsNonFiniteLogitsAndWeighsWithTemperature) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> logits = {1.0f, -inf, 3.0f, std::nanf(""), inf, 2.0f};
    CandidateSet set;
    set.build(logits, 0.5f, 0);
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{0, 2, 5}));
    for (const CandidateSet::Entry& e : set.entries())
        EXPECT_FLOAT_EQ(e.weight, std::exp((e.logit - 3.0f) / 0.5f));
    EXPECT_NEAR(set.total_weight(), 1.0 + std::exp(-2.0) + std::exp(-4.0), 1e-6);
}

TEST(CandidateSetTest, TopKKeepsExactlyKWithTiesToLowerIds) {
    const std::vector<float> logits = {1.0f, 5.0f, 3.0f, 4.0f, 3.0f, 3.0f};
    CandidateSet set;
    set.build(logits, 1.0f, 2);
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{1, 3}));
    set.build(logits, 1.0f, 4);
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{1, 3, 2, 4}));
    set.build(logits, 1.0f, 6);
    EXPECT_EQ(set.entries().size(), 6u);
    set.build(logits, 1.0f, 100);
    EXPECT_EQ(set.entries().size(), 6u);
}

TEST(CandidateSetTest, TopPKeepsSmallestPrefixReachingTheMass) {
    const std::vector<float> logits = log_of({0.05, 0.5, 0.15, 0.3});
    CandidateSet set;
    const std::vector<std::pair<float, std::set<int32_t>>> cases = {
        {0.01f, {1}}, {0.45f, {1}}, {0.75f, {1, 3}}, {0.9f, {1, 3, 2}}, {0.99f, {1, 3, 2, 0}}};
    for (const auto& [top_p, expected] : cases) {
        set.build(logits, 1.0f, 0);
        set.apply_top_p(top_p);
        EXPECT_EQ(tokens_of(set), expected) << "top_p " << top_p;
    }
}

TEST(CandidateSetTest, TopPKeepsEqualProbabilitiesInIdOrder) {
    const std::vector<float> logits(8, 0.0f);
    CandidateSet set;
    set.build(logits, 1.0f, 0);
    set.apply_top_p(0.3f);  // mass before the third token is 0.25 < 0.3, before the fourth 0.375
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{0, 1, 2}));
}

TEST(CandidateSetTest, MinPKeepsTokensNearTheTopProbability) {
    const std::vector<float> logits = log_of({0.4, 0.2, 0.1, 0.3});
    CandidateSet set;
    set.build(logits, 1.0f, 0);
    set.apply_min_p(0.3f);  // threshold 0.12: drops 0.1
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{0, 1, 3}));
    set.apply_min_p(0.6f);  // threshold 0.24 relative to the kept top 0.4
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{0, 3}));
    set.apply_min_p(1.0f);
    EXPECT_EQ(tokens_of(set), (std::set<int32_t>{0}));
}

TEST(CandidateSetTest, PickWalksTheCumulativeWeights) {
    const std::vector<float> logits = log_of({0.25, 0.5, 0.25});
    CandidateSet set;
    set.build(logits, 1.0f, 0);
    std::vector<int32_t> order;
    for (const CandidateSet::Entry& e : set.entries()) order.push_back(e.token);
    EXPECT_EQ(set.pick(0.0), order.front());
    EXPECT_EQ(set.pick(std::nextafter(1.0, 0.0)), order.back());
}

struct LargeVocabCase {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
};

TEST(CandidateSetTest, LargeVocabularyMatchesFullSortReference) {
    constexpr size_t kVocab = 151936;
    SamplingRng rng(2024);
    std::vector<float> logits(kVocab);
    for (float& logit : logits)  // a few quantised levels force many ties
        logit = std::floor(static_cast<float>(rng.next_double()) * 4000.0f) / 200.0f;
    const std::vector<LargeVocabCase> cases = {
        {1.0f, 50, 1.0f, 0.0f},    {0.7f, 0, 0.9f, 0.0f},     {1.0f, 0, 0.99f, 0.0f},
        {2.0f, 0, 0.5f, 0.0f},     {0.8f, 1000, 0.95f, 0.1f}, {1.0f, 0, 1.0f, 0.5f},
        {1.3f, 20000, 0.3f, 0.0f}, {0.5f, 1, 0.9f, 0.9f},
    };
    CandidateSet set;
    for (const LargeVocabCase& c : cases) {
        set.build(logits, c.temperature, c.top_k);
        set.apply_top_p(c.top_p);
        set.apply_min_p(c.min_p);
        const std::set<int32_t> expected =
            naive_kept(logits, c.temperature, c.top_k, c.top_p, c.min_p);
        EXPECT_EQ(tokens_of(set), expected)
            << "temperature " << c.temperature << " top_k " << c.top_k << " top_p " << c.top_p
            << " min_p " << c.min_p;
        EXPECT_EQ(set.entries().size(), expected.size());
    }
}

}  // namespace
}  // namespace se
