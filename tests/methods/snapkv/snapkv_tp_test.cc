// SnapKV (and the window-eviction runtime it shares with PyramidKV) under tensor parallelism: 2
// and 4 ranks, each scoring only its own heads, evict exactly the entries one rank of the whole
// model evicts (the max over KV heads is reduced over the ranks), at the end of chunked prompts
// and in decode re-eviction, and their caches stay in lockstep (same positions, same blocks).
#include <gtest/gtest.h>

#include <string>

#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"

namespace se::testing {
namespace {

struct TpCase {
    int32_t size;
    int32_t num_kv_heads;
    bool max_pool;
};

class SnapTpTest : public ::testing::TestWithParam<TpCase> {};

TEST_P(SnapTpTest, RanksEvictWhatOneRankEvicts) {
    const TpCase c = GetParam();
    const DriverOptions whole{.num_layers = 3,
                              .num_heads = 8,
                              .num_kv_heads = c.num_kv_heads,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    const nlohmann::json knobs = {
        {"budget", 20}, {"window", 4},          {"sink", 2},
        {"kernel", 3},  {"decode_interval", 2}, {"pooling", c.max_pool ? "max" : "avg"}};
    auto single = make_driver("snapkv", knobs, whole);
    ShardedDrivers ranks("snapkv", knobs, whole, c.size);
    const TokenData data(*single, 2, 64, 11);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 8)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    // Both prompts compacted every layer, and decode compacted again.
    ASSERT_GT(num_compactions(single->decisions()), 2 * whole.num_layers);
    for (int32_t r = 0; r < c.size; ++r) {
        expect_same_decisions(single->decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r));
    }
    expect_lockstep_lanes(*single, ranks, {1, 2});
}

INSTANTIATE_TEST_SUITE_P(Ranks, SnapTpTest,
                         ::testing::Values(TpCase{2, 2, true}, TpCase{2, 8, false},
                                           TpCase{4, 4, true}, TpCase{4, 4, false},
                                           TpCase{4, 8, true}),
                         [](const auto& info) {
                             const TpCase& c = info.param;
                             return "Tp" + std::to_string(c.size) + "Kv" +
                                    std::to_string(c.num_kv_heads) + (c.max_pool ? "Max" : "Avg");
                         });

}  // namespace
}  // namespace se::testing
