// Ada-SnapKV under tensor parallelism: 2 and 4 ranks, each scoring its own KV heads, split the
// layer's budget over every head as one rank of the whole model does (the scores are gathered),
// and each rank compacts exactly its own heads' lanes as that rank compacts them.
#include <gtest/gtest.h>

#include <string>

#include "sparse/evicting_cache_manager.h"
#include "support/methods/sharded_drivers.h"
#include "support/methods/token_data.h"

namespace se::testing {
namespace {

// What rank `rank` of `size` decides when it holds KV heads [rank * H / size, ...) of a model of
// `num_kv_heads` and `num_layers`: the single rank's compactions of its heads, on its own lanes
// (layer * local heads + local head), in the same order.
std::vector<StepDecisions> rank_share(const std::vector<StepDecisions>& single,
                                      int32_t num_kv_heads, int32_t rank, int32_t size) {
    const int32_t local = num_kv_heads / size;
    std::vector<StepDecisions> out;
    for (const StepDecisions& step : single) {
        StepDecisions mine{.selections = step.selections, .eviction = {}};
        for (const Compaction& c : step.eviction.compactions) {
            const int32_t layer = c.lane / num_kv_heads;
            const int32_t g = c.lane % num_kv_heads - rank * local;
            if (g < 0 || g >= local) continue;
            mine.eviction.compactions.push_back(
                {.seq = c.seq, .lane = layer * local + g, .keep = c.keep});
        }
        out.push_back(std::move(mine));
    }
    return out;
}

class AdaTpTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(AdaTpTest, EveryRankCompactsItsHeadsAsOneRankDoes) {
    const int32_t size = GetParam();
    const DriverOptions whole{.num_layers = 2,
                              .num_heads = 8,
                              .num_kv_heads = 4,
                              .head_dim = 8,
                              .block_size = 4,
                              .record_decisions = true};
    const nlohmann::json knobs = {{"budget", 14}, {"window", 4}, {"kernel", 3}, {"alpha", 0.2}};
    auto single = make_driver("adakv", knobs, whole);
    ShardedDrivers ranks("adakv", knobs, whole, size);
    const TokenData data(*single, 2, 64, 23);
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 2)) {
        const std::vector<LayerInputs> inputs = data.step_inputs(plan);
        single->step(plan, inputs);
        ranks.step(plan, inputs);
    }
    // Every (sequence, layer, head) compacted, to caps that differ across heads.
    ASSERT_EQ(num_compactions(single->decisions()), 2 * whole.num_layers * whole.num_kv_heads);
    const auto& want = dynamic_cast<const EvictingCacheManager&>(*single->method().cache);
    bool unequal_caps = false;
    for (int32_t g = 1; g < whole.num_kv_heads; ++g) {
        unequal_caps = unequal_caps || want.kv().num_entries(1, g) != want.kv().num_entries(1, 0);
    }
    ASSERT_TRUE(unequal_caps) << "a uniform split shows nothing";
    const int32_t local = whole.num_kv_heads / size;
    for (int32_t r = 0; r < size; ++r) {
        expect_same_decisions(rank_share(single->decisions(), whole.num_kv_heads, r, size),
                              ranks.rank(r).decisions(), "rank " + std::to_string(r));
        const auto& got = dynamic_cast<const EvictingCacheManager&>(*ranks.rank(r).method().cache);
        for (SeqId seq : {1, 2}) {
            for (int32_t layer = 0; layer < whole.num_layers; ++layer) {
                for (int32_t g = 0; g < local; ++g) {
                    const auto p = got.entry_positions(seq, got.lane(layer, g));
                    const auto q = want.entry_positions(seq, want.lane(layer, r * local + g));
                    EXPECT_EQ(std::vector<int32_t>(p.begin(), p.end()),
                              std::vector<int32_t>(q.begin(), q.end()))
                        << "rank " << r << " seq " << seq << " layer " << layer << " head " << g;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AdaTpTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace se::testing
