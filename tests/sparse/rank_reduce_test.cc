// Reductions of scores over the ranks of a tensor-parallel group: without a group nothing
// changes; over 2 and 4 ranks the max and the gather are exact (signed zeros and infinities
// included) and the sum is the rank-order sum, the same bits on every rank.
#include "sparse/rank_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "support/rank_threads.h"

namespace se::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Rank r's values: random, with planted signed zeros, infinities and subnormals.
std::vector<float> rank_values(int32_t r, size_t n) {
    std::mt19937_64 rng(100 + r);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    x[0] = -0.0f;
    x[1] = -kInf;
    if (r == 1) x[4] = kInf;
    x[2] = std::numeric_limits<float>::denorm_min() * static_cast<float>(r + 1);
    x[3] = -0.0f;
    return x;
}

TEST(RankReduceTest, WithoutAGroupValuesStayAsTheyAre) {
    std::vector<float> x = rank_values(0, 16);
    const std::vector<uint32_t> want = float_bits(x);
    max_over_ranks(nullptr, x);
    sum_over_ranks(nullptr, x);
    EXPECT_EQ(float_bits(x), want);
    EXPECT_EQ(float_bits(gather_over_ranks(nullptr, x)), want);
}

class RankReduceTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(RankReduceTest, MaxAndSumAreTheRankOrderReductionOnEveryRank) {
    const int32_t size = GetParam();
    constexpr size_t kN = 33;
    std::vector<float> max = rank_values(0, kN), sum = max;
    for (int32_t r = 1; r < size; ++r) {
        const std::vector<float> x = rank_values(r, kN);
        for (size_t i = 0; i < kN; ++i) {
            max[i] = std::max(max[i], x[i]);
            sum[i] += x[i];
        }
    }
    std::vector<std::vector<float>> got_max(static_cast<size_t>(size)), got_sum = got_max;
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        std::vector<float> a = rank_values(r, kN), b = a;
        max_over_ranks(&comm, a);
        sum_over_ranks(&comm, b);
        got_max[static_cast<size_t>(r)] = a;
        got_sum[static_cast<size_t>(r)] = b;
    });
    for (int32_t r = 0; r < size; ++r) {
        EXPECT_EQ(float_bits(got_max[static_cast<size_t>(r)]), float_bits(max)) << "rank " << r;
        EXPECT_EQ(float_bits(got_sum[static_cast<size_t>(r)]), float_bits(sum)) << "rank " << r;
    }
}

TEST_P(RankReduceTest, GatherPlacesEveryRanksValuesExactlyInRankOrder) {
    const int32_t size = GetParam();
    constexpr size_t kN = 9;
    std::vector<float> want;
    for (int32_t r = 0; r < size; ++r) {
        const std::vector<float> x = rank_values(r, kN);
        want.insert(want.end(), x.begin(), x.end());
    }
    std::vector<std::vector<float>> got(static_cast<size_t>(size));
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        got[static_cast<size_t>(r)] = gather_over_ranks(&comm, rank_values(r, kN));
    });
    for (int32_t r = 0; r < size; ++r) {
        EXPECT_EQ(float_bits(got[static_cast<size_t>(r)]), float_bits(want)) << "rank " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RankReduceTest, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace se::testing
