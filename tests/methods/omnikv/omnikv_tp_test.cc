// OmniKV under tensor parallelism: 2 and 4 ranks, each scoring the candidates with its own query
// heads at the filter layer, reduce the token scores (a max over heads) over the ranks, so every
// rank's target layers read exactly the set one rank of the whole model chooses, at every decode
// step.
#include <gtest/gtest.h>

#include <string>

#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"

namespace se::testing {
namespace {

class OmniKvTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(OmniKvTpTest, RanksReadTheSetOneRankChooses) {
    const int32_t size = GetParam();
    const DriverOptions whole{.num_layers = 4,
                              .num_heads = 8,
                              .num_kv_heads = 4,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    // Layer 1 chooses 18 of the candidates for layers 2 and 3.
    const nlohmann::json knobs = {
        {"budget", 24}, {"sink", 2}, {"recent", 4}, {"filter_layers", {1}}};
    auto single = make_driver("omnikv", knobs, whole);
    ShardedDrivers ranks("omnikv", knobs, whole, size);
    const TokenData data(*single, 2, 64, 31);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 5)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    // The last decode step's target layers read a chosen set of both sequences.
    const Selection& last = single->decisions().back().selections.at(3);
    ASSERT_EQ(last.kind, SelectionKind::kEntries);
    ASSERT_FALSE(last.picks.at(0).all);
    ASSERT_FALSE(last.picks.at(1).all);
    for (int32_t r = 0; r < size; ++r) {
        expect_same_decisions(single->decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r));
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, OmniKvTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
