// Quest under tensor parallelism: 2 and 4 ranks, each bounding the pages' scores with its own
// query heads against its own KV heads' summaries, reduce the page scores (a max over heads) over
// the ranks, so every rank reads exactly the pages one rank of the whole model chooses, in every
// sparse layer of every decode step.
#include <gtest/gtest.h>

#include <string>

#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"

namespace se::testing {
namespace {

class QuestTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(QuestTpTest, RanksReadThePagesOneRankChooses) {
    const int32_t size = GetParam();
    const DriverOptions whole{.num_layers = 3,
                              .num_heads = 8,
                              .num_kv_heads = 4,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    // K = 4 pages of 4 entries: the newest and the top 3 of the others.
    const nlohmann::json knobs = {{"budget", 16}, {"skip_layers", 1}};
    auto single = make_driver("quest", knobs, whole);
    ShardedDrivers ranks("quest", knobs, whole, size);
    const TokenData data(*single, 2, 64, 37);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 5)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    const Selection& last = single->decisions().back().selections.at(2);
    ASSERT_EQ(last.kind, SelectionKind::kPages);
    ASSERT_EQ(last.picks.at(0).ids.size(), 4u);
    ASSERT_EQ(last.picks.at(1).ids.size(), 4u);
    for (int32_t r = 0; r < size; ++r) {
        expect_same_decisions(single->decisions(), ranks.rank(r).decisions(),
                              "rank " + std::to_string(r));
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, QuestTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
