// Prefix-Cache Pruning's token decision: ranges shrink inward to blocks and share one budget;
// keep_ratio floors; keep 0 drops everything in the ranges; the kept set is the top scores with
// ties to the lower position (checked against a naive selection written here); errors name the
// field.
#include "kv/prune_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace se {
namespace {

PruneRequest request(std::vector<TokenRange> ranges, std::optional<int32_t> keep_tokens,
                     std::optional<double> keep_ratio = std::nullopt) {
    return {.prefix_tokens = 200,
            .block_size = 16,
            .ranges = std::move(ranges),
            .keep_tokens = keep_tokens,
            .keep_ratio = keep_ratio};
}

TEST(PrunePlanTest, RangesShrinkInwardToWholeBlocks) {
    auto plan =
        align_prune_ranges(request({{.begin = 20, .end = 70}, {.begin = 96, .end = 128}}, 0));
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_EQ(plan->ranges, (std::vector<TokenRange>{{32, 64}, {96, 128}}));
    EXPECT_TRUE(plan->shrunk);
    EXPECT_EQ(plan->eligible, 64);

    auto aligned = align_prune_ranges(request({{.begin = 16, .end = 48}}, 0));
    ASSERT_TRUE(aligned.ok());
    EXPECT_FALSE(aligned->shrunk);

    // A range inside one block prunes nothing, and says so.
    auto empty = align_prune_ranges(request({{.begin = 17, .end = 31}}, 0));
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->ranges.empty());
    EXPECT_TRUE(empty->shrunk);
    EXPECT_EQ(empty->freed(), 0);
}

TEST(PrunePlanTest, TheBudgetIsSharedAndRatiosFloor) {
    // 32 + 32 eligible; 30% of 64 = 19.2 -> 19.
    auto plan = align_prune_ranges(request({{0, 32}, {64, 96}}, std::nullopt, 0.3));
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->keep, 19);
    EXPECT_EQ(plan->freed(), 45);
    // A budget above what the ranges hold keeps them whole.
    auto all = align_prune_ranges(request({{0, 32}}, 1000));
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->keep, 32);
    EXPECT_EQ(all->freed(), 0);
}

TEST(PrunePlanTest, KeepZeroDropsEveryPositionInTheRanges) {
    auto plan = align_prune_ranges(request({{16, 48}, {80, 96}}, 0));
    ASSERT_TRUE(plan.ok());
    choose_kept(std::vector<float>(48, 1.0f), *plan);
    EXPECT_TRUE(plan->kept.empty());
    ASSERT_EQ(plan->dropped.size(), 48u);
    EXPECT_EQ(plan->dropped.front(), 16);
    EXPECT_EQ(plan->dropped[31], 47);
    EXPECT_EQ(plan->dropped[32], 80);
    EXPECT_EQ(plan->dropped.back(), 95);
}

TEST(PrunePlanTest, KeepsTheTopScoresWithTiesToTheLowerPosition) {
    std::mt19937 rng(7);
    for (int32_t trial = 0; trial < 50; ++trial) {
        auto plan = align_prune_ranges(request({{0, 48}, {112, 176}}, trial % 40));
        ASSERT_TRUE(plan.ok());
        // Few distinct values, so ties are everywhere.
        std::vector<float> scores(static_cast<size_t>(plan->eligible));
        for (float& s : scores) s = static_cast<float>(rng() % 5);
        if (trial % 7 == 0) scores[3] = NAN;  // never preferred
        choose_kept(scores, *plan);
        // Naive: repeatedly take the best remaining score, the first one among equals.
        std::vector<int32_t> positions;
        for (const TokenRange& r : plan->ranges) {
            for (int32_t p = r.begin; p < r.end; ++p) positions.push_back(p);
        }
        std::set<int32_t> expected;
        std::vector<bool> taken(scores.size(), false);
        for (int32_t k = 0; k < plan->keep; ++k) {
            int32_t best = -1;
            for (size_t i = 0; i < scores.size(); ++i) {
                if (taken[i]) continue;
                const float s = std::isnan(scores[i]) ? -INFINITY : scores[i];
                const float b =
                    best < 0 ? 0.0f : (std::isnan(scores[best]) ? -INFINITY : scores[best]);
                if (best < 0 || s > b) best = static_cast<int32_t>(i);
            }
            taken[best] = true;
            expected.insert(positions[best]);
        }
        EXPECT_EQ(std::set<int32_t>(plan->kept.begin(), plan->kept.end()), expected);
        EXPECT_EQ(plan->kept.size() + plan->dropped.size(), positions.size());
        EXPECT_TRUE(std::is_sorted(plan->kept.begin(), plan->kept.end()));
        EXPECT_EQ(static_cast<int32_t>(plan->dropped.size()), plan->freed());
    }
}

TEST(PrunePlanTest, BadRequestsNameTheField) {
    struct Case {
        PruneRequest request;
        const char* fragment;
    };
    PruneRequest bad_block = request({{0, 32}}, 1);
    bad_block.block_size = 0;
    const std::vector<Case> cases = {
        {request({{0, 32}}, std::nullopt), "exactly one of keep_tokens and keep_ratio"},
        {request({{0, 32}}, 4, 0.5), "exactly one of keep_tokens and keep_ratio"},
        {request({{0, 32}}, -1), "keep_tokens must be >= 0"},
        {request({{0, 32}}, std::nullopt, 1.5), "keep_ratio must be in [0, 1]"},
        {request({{0, 300}}, 1), "not inside the cached prefix [0, 200)"},
        {request({{40, 20}}, 1), "range [40, 20)"},
        {request({{0, 64}, {48, 96}}, 1), "overlap"},
        {request({}, 1), "ranges"},
        {bad_block, "block_size"},
    };
    for (const Case& c : cases) {
        auto plan = align_prune_ranges(c.request);
        ASSERT_FALSE(plan.ok()) << c.fragment;
        EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(plan.status().message().find(c.fragment), std::string::npos)
            << plan.status().message();
    }
}

}  // namespace
TEST(PrunePlanTest, BlocksPrunedBeforeSplitTheRangesAndLeaveTheBudget) {
    PruneRequest r = request({{.begin = 0, .end = 80}}, std::nullopt, 0.5);
    r.pruned_blocks = {1, 4};  // [16, 32) and [64, 80)
    auto plan = align_prune_ranges(r);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_EQ(plan->ranges, (std::vector<TokenRange>{{0, 16}, {32, 64}}));
    EXPECT_EQ(plan->already_pruned, 32);
    EXPECT_EQ(plan->eligible, 48);
    EXPECT_EQ(plan->keep, 24);
    EXPECT_FALSE(plan->shrunk);
}

}  // namespace se
