// Ada-KV's budget split under tensor parallelism: the heads' scores split by rank (2 and 4 ranks),
// every rank's caps for its own heads are the single-rank caps of those heads, exactly (the
// scores are gathered, the split decided over every head); a rank splitting over its own heads
// alone would not give them.
#include <gtest/gtest.h>

#include <random>

#include "methods/adakv/head_budgets.h"
#include "support/rank_threads.h"

namespace se::testing {
namespace {

struct CapsCase {
    int32_t size;
    double alpha;
};

class HeadCapsTpTest : public ::testing::TestWithParam<CapsCase> {};

TEST_P(HeadCapsTpTest, EveryRankGetsTheSingleRankCapsOfItsHeads) {
    const auto [size, alpha] = GetParam();
    constexpr int32_t kHeads = 8;
    constexpr int32_t kLength = 30;
    constexpr int32_t kBase = 6;
    // Heads with very different score levels, so the global split is far from uniform; a few
    // exact ties across heads (ties go to the lower head).
    std::mt19937_64 rng(17);
    std::vector<std::vector<float>> scores(kHeads);
    for (int32_t g = 0; g < kHeads; ++g) {
        std::uniform_real_distribution<float> uniform(0.0f, 0.01f * static_cast<float>(1 + g * g));
        for (int32_t j = 0; j < kLength; ++j) scores[g].push_back(uniform(rng));
        scores[g][3] = 0.25f;
    }
    const std::vector<int32_t> want = adakv::adaptive_head_caps(scores, kBase, alpha);
    // alpha = 1 is the uniform split by definition; below it these scores split unevenly.
    if (alpha < 1.0) {
        ASSERT_NE(want, std::vector<int32_t>(kHeads, want[0])) << "a uniform split shows nothing";
    }
    const int32_t local = kHeads / size;
    std::vector<std::vector<int32_t>> got(static_cast<size_t>(size)), alone = got;
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        const std::vector<std::vector<float>> own(scores.begin() + r * local,
                                                  scores.begin() + (r + 1) * local);
        got[static_cast<size_t>(r)] = adakv::rank_head_caps(own, kBase, alpha, &comm);
        alone[static_cast<size_t>(r)] = adakv::rank_head_caps(own, kBase, alpha, nullptr);
    });
    bool any_differs = false;
    for (int32_t r = 0; r < size; ++r) {
        const std::vector<int32_t> mine(want.begin() + r * local, want.begin() + (r + 1) * local);
        EXPECT_EQ(got[static_cast<size_t>(r)], mine) << "rank " << r;
        any_differs = any_differs || alone[static_cast<size_t>(r)] != mine;
    }
    if (alpha < 1.0) EXPECT_TRUE(any_differs) << "splitting per rank would have been enough";
}

INSTANTIATE_TEST_SUITE_P(Ranks, HeadCapsTpTest,
                         ::testing::Values(CapsCase{2, 0.0}, CapsCase{2, 0.2}, CapsCase{4, 0.2},
                                           CapsCase{4, 0.5}, CapsCase{4, 1.0}),
                         [](const auto& info) {
                             return "Tp" + std::to_string(info.param.size) + "Alpha" +
                                    std::to_string(static_cast<int>(info.param.alpha * 10));
                         });

}  // namespace
}  // namespace se::testing
