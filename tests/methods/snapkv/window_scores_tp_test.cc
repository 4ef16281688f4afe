// The observation-window score under tensor parallelism: the KV groups' window mass split by rank
// (2 and 4 ranks, each holding whole groups), reduced over the ranks through the communicator,
// gives every rank the single-rank scores bit for bit, for every pooling; without the reduction
// the ranks would rank by their own heads alone.
#include <gtest/gtest.h>

#include <random>

#include "sparse/window_scores.h"
#include "support/rank_threads.h"

namespace se::testing {
namespace {

class WindowScoresTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(WindowScoresTpTest, ReducedOverRanksTheScoresAreTheSingleRanksBitwise) {
    const int32_t size = GetParam();
    constexpr int32_t kKvHeads = 8;
    constexpr int32_t kCandidates = 41;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> uniform(0.0f, 0.05f);
    std::vector<float> mass(static_cast<size_t>(kKvHeads * kCandidates));
    for (float& m : mass) m = uniform(rng);
    // A few entries strong in one head only, in heads every rank holds.
    for (int32_t g = 0; g < kKvHeads; ++g) mass[g * kCandidates + 5 * g] = 0.5f + 0.01f * g;
    const int32_t local_heads = kKvHeads / size;
    for (int32_t kernel : {1, 3, 7}) {
        for (PoolKind pool : {PoolKind::kMax, PoolKind::kAvg}) {
            const std::vector<float> want =
                shared_window_scores(mass, kKvHeads, kernel, pool, nullptr);
            std::vector<std::vector<float>> got(static_cast<size_t>(size)), alone = got;
            run_ranks(size, [&](int32_t r, Communicator& comm) {
                const auto first = mass.begin() + int64_t{r} * local_heads * kCandidates;
                const std::vector<float> local(first, first + local_heads * kCandidates);
                got[static_cast<size_t>(r)] =
                    shared_window_scores(local, local_heads, kernel, pool, &comm);
                alone[static_cast<size_t>(r)] =
                    shared_window_scores(local, local_heads, kernel, pool, nullptr);
            });
            for (int32_t r = 0; r < size; ++r) {
                EXPECT_EQ(float_bits(got[static_cast<size_t>(r)]), float_bits(want))
                    << "rank " << r << " kernel " << kernel;
                // The rank's own heads alone miss what the others' heads score.
                EXPECT_NE(float_bits(alone[static_cast<size_t>(r)]), float_bits(want))
                    << "rank " << r << " kernel " << kernel;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, WindowScoresTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
