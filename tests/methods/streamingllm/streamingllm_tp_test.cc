// StreamingLLM under tensor parallelism: its rule reads no scores (sinks and recent positions),
// so 2 and 4 ranks, with nothing to reduce, evict exactly what one rank of the whole model
// evicts after every step and their caches stay in lockstep.
#include <gtest/gtest.h>

#include <string>

#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"

namespace se::testing {
namespace {

class StreamingTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(StreamingTpTest, RanksEvictWhatOneRankEvicts) {
    const int32_t size = GetParam();
    const DriverOptions whole{.num_layers = 2,
                              .num_heads = 8,
                              .num_kv_heads = 4,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    const nlohmann::json knobs = {{"budget", 12}, {"sink", 2}};
    auto single = make_driver("streamingllm", knobs, whole);
    ShardedDrivers ranks("streamingllm", knobs, whole, size);
    const TokenData data(*single, 2, 64, 41);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 3)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    ASSERT_GT(num_compactions(single->decisions()), 0);
    for (int32_t r = 0; r < size; ++r) {
        expect_same_decisions(single->decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r));
    }
    expect_lockstep_lanes(*single, ranks, {1, 2});
}

INSTANTIATE_TEST_SUITE_P(Ranks, StreamingTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
