// The observation-window score (sparse/window_scores.h) against the naive double-precision
// statement of SPECS.md section 0 and 3.2: random keys in shuffled paged blocks, resident entries
// with gaps in their positions (as after an eviction), window rows that each see a different
// prefix, G = 1, 4, 8, every pooling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "sparse/key_scorer.h"
#include "sparse/window_scores.h"
#include "support/methods/naive_window.h"

namespace se::testing {
namespace {

TEST(QueryWindowTest, KeepsTheLastRowsWithTheirPositions) {
    QueryWindow window(4, 2);
    const std::vector<float> a = {0, 0, 1, 1, 2, 2};
    const std::vector<float> b = {3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
    window.push(a.data(), 3, 10);
    ASSERT_EQ(window.size(), 3);
    window.push(b.data(), 5, 13);
    ASSERT_EQ(window.size(), 4);
    for (int32_t i = 0; i < 4; ++i) {
        EXPECT_EQ(window.position(i), 14 + i);
        EXPECT_EQ(window.row(i)[0], 4.0f + i);
        EXPECT_EQ(window.row(i)[1], 4.0f + i);
    }
}

class WindowScoresTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(WindowScoresTest, MatchTheNaiveWindowMass) {
    const int32_t num_heads = 8;
    const int32_t num_kv_heads = num_heads / GetParam();
    const int32_t dim = 8;
    const int32_t block = 8;
    const int32_t n = 37;  // resident entries, not a block multiple
    const AttentionArgs args{.num_heads = num_heads,
                             .num_kv_heads = num_kv_heads,
                             .head_dim = dim,
                             .scale = 1.0f / std::sqrt(float{dim})};
    std::mt19937_64 rng(GetParam());
    std::normal_distribution<float> normal(0.0f, 1.5f);
    // Keys of entry j in block table[j / block], shuffled among 8 blocks.
    const int32_t num_blocks = 8;
    const int64_t entry = int64_t{num_kv_heads} * dim;
    std::vector<float> k_blocks(static_cast<size_t>(num_blocks * block * entry));
    std::vector<float> v_blocks(k_blocks.size(), 0.0f);
    for (float& x : k_blocks) x = normal(rng);
    const std::vector<int32_t> table = {5, 2, 7, 0, 3};
    const PagedKvCache cache{.layout = {.dtype = DType::kF32,
                                        .block_size = block,
                                        .num_kv_heads = num_kv_heads,
                                        .head_dim = dim},
                             .k_blocks = k_blocks.data(),
                             .v_blocks = v_blocks.data(),
                             .num_blocks = num_blocks};
    // Positions with gaps: entries 0..29 hold every other position, the last 7 are consecutive.
    std::vector<int32_t> positions;
    for (int32_t j = 0; j < 30; ++j) positions.push_back(2 * j);
    for (int32_t p = 60; p < 67; ++p) positions.push_back(p);
    // Six window rows: at 52 and 56 (pushed first, partly dropped) and the last entries.
    QueryWindow window(6, num_heads * dim);
    std::vector<std::vector<float>> rows;
    auto push = [&](int32_t count, int32_t first) {
        std::vector<float> q(static_cast<size_t>(count * num_heads * dim));
        for (float& x : q) x = normal(rng);
        window.push(q.data(), count, first);
        for (int32_t r = 0; r < count; ++r) {
            rows.emplace_back(q.begin() + r * num_heads * dim,
                              q.begin() + (r + 1) * num_heads * dim);
        }
    };
    push(2, 51);
    push(5, 62);
    ASSERT_EQ(window.size(), 6);
    std::vector<const float*> keys, queries;
    std::vector<int32_t> visible;
    for (int32_t j = 0; j < n; ++j) {
        const int64_t slot = int64_t{table[j / block]} * block + j % block;
        keys.push_back(k_blocks.data() + slot * entry);
    }
    const std::vector<int32_t> row_positions = {52, 62, 63, 64, 65, 66};
    for (int32_t i = 0; i < 6; ++i) {
        ASSERT_EQ(window.position(i), row_positions[i]);
        queries.push_back(rows[rows.size() - 6 + i].data());
        // Entries at or before the row: 27 of the even positions for 52, then 31, 32, ...
        visible.push_back(static_cast<int32_t>(
            std::upper_bound(positions.begin(), positions.end(), row_positions[i]) -
            positions.begin()));
    }
    const KeyScorer scorer(cache, table, n, args);
    const int32_t candidates = n - 4;
    const NaiveHeads heads{
        .num_heads = num_heads, .num_kv_heads = num_kv_heads, .head_dim = dim, .scale = args.scale};
    const std::vector<float> mass = window_group_mass(scorer, positions, window, candidates, args);
    ASSERT_EQ(mass.size(), static_cast<size_t>(num_kv_heads * candidates));
    for (int32_t kernel : {1, 3, 7}) {
        for (bool max_pool : {true, false}) {
            const std::vector<float> got = shared_window_scores(
                mass, num_kv_heads, kernel, max_pool ? PoolKind::kMax : PoolKind::kAvg, nullptr);
            const std::vector<double> want =
                naive_window_scores(heads, keys, queries, visible, candidates, kernel, max_pool);
            ASSERT_EQ(got.size(), want.size());
            for (size_t j = 0; j < got.size(); ++j) {
                EXPECT_NEAR(got[j], want[j], 1e-6 * std::max(1.0, want[j]))
                    << "entry " << j << " kernel " << kernel << (max_pool ? " max" : " avg");
            }
        }
    }
    // Each group's mass is a mean of probability rows: it sums to at most 1 over the candidates.
    for (int32_t g = 0; g < num_kv_heads; ++g) {
        double total = 0.0;
        for (int32_t j = 0; j < candidates; ++j) total += mass[g * candidates + j];
        EXPECT_GT(total, 0.0);
        EXPECT_LE(total, 1.0 + 1e-6);
    }
}

INSTANTIATE_TEST_SUITE_P(Gqa, WindowScoresTest, ::testing::Values(1, 4, 8),
                         [](const auto& info) { return "G" + std::to_string(info.param); });

}  // namespace
}  // namespace se::testing
