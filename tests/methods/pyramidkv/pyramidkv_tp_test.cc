// PyramidKV under tensor parallelism: 2 and 4 ranks, each scoring only its own heads, evict per
// layer exactly what one rank of the whole model evicts (the shared window runtime reduces the
// max over KV heads over the ranks; the per-layer schedule depends on lengths alone), and their
// caches stay in lockstep.
#include <gtest/gtest.h>

#include <string>

#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"

namespace se::testing {
namespace {

class PyramidTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(PyramidTpTest, RanksEvictWhatOneRankEvicts) {
    const int32_t size = GetParam();
    const DriverOptions whole{.num_layers = 3,
                              .num_heads = 8,
                              .num_kv_heads = 4,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    // b = 16: a prompt of 45 selects 24, 16, 8 by layer; one of 29 selects 16 everywhere.
    const nlohmann::json knobs = {
        {"budget", 20}, {"window", 4}, {"sink", 2}, {"kernel", 3}, {"beta", 2}};
    auto single = make_driver("pyramidkv", knobs, whole);
    ShardedDrivers ranks("pyramidkv", knobs, whole, size);
    const TokenData data(*single, 2, 64, 3);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 2)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    ASSERT_EQ(num_compactions(single->decisions()), 2 * whole.num_layers);
    for (int32_t r = 0; r < size; ++r) {
        expect_same_decisions(single->decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r));
    }
    expect_lockstep_lanes(*single, ranks, {1, 2});
}

INSTANTIATE_TEST_SUITE_P(Ranks, PyramidTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
