// H2O under tensor parallelism: 2 and 4 ranks, each adding the attention mass of its own query
// heads, sum the step's mass over the ranks before accumulating it, so every rank holds the same
// scores bit for bit and evicts the same entries at every step; the scores are the single rank's
// up to summation order, and on these inputs (no near-ties) so are the evictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sparse/evicting_cache_manager.h"
#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"
#include "support/rank_threads.h"

namespace se::testing {
namespace {

class H2oTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(H2oTpTest, RanksAccumulateTheSameMassAndEvictAsOneRank) {
    const int32_t size = GetParam();
    const DriverOptions whole{.num_layers = 2,
                              .num_heads = 8,
                              .num_kv_heads = 4,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    const nlohmann::json knobs = {{"budget", 16}, {"recent_ratio", 0.25}, {"evict_interval", 2}};
    auto single = make_driver("h2o", knobs, whole);
    ShardedDrivers ranks("h2o", knobs, whole, size);
    const TokenData data(*single, 2, 64, 29);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 6)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    ASSERT_GT(num_compactions(single->decisions()), 4 * whole.num_layers);
    auto& want = dynamic_cast<EvictingCacheManager&>(*single->method().cache);
    auto& first = dynamic_cast<EvictingCacheManager&>(*ranks.rank(0).method().cache);
    for (int32_t r = 0; r < size; ++r) {
        expect_same_decisions(ranks.rank(0).decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r) + " against rank 0");
        expect_same_decisions(single->decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r));
        auto& got = dynamic_cast<EvictingCacheManager&>(*ranks.rank(r).method().cache);
        for (SeqId seq : {1, 2}) {
            for (int32_t layer = 0; layer < whole.num_layers; ++layer) {
                const auto mine = got.entry_scores(seq, got.lane(layer));
                EXPECT_EQ(float_bits(mine), float_bits(first.entry_scores(seq, first.lane(layer))))
                    << "rank " << r << " seq " << seq << " layer " << layer;
                const auto one = want.entry_scores(seq, want.lane(layer));
                ASSERT_EQ(mine.size(), one.size());
                for (size_t j = 0; j < one.size(); ++j) {
                    EXPECT_NEAR(mine[j], one[j], 1e-5f * std::max(1.0f, one[j]))
                        << "rank " << r << " seq " << seq << " layer " << layer << " entry " << j;
                }
            }
        }
    }
    expect_lockstep_lanes(*single, ranks, {1, 2});
}

INSTANTIATE_TEST_SUITE_P(Ranks, H2oTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
