// StreamingLLM against a naive statement of its rule (SPECS.md 3.1): after every step each layer
// holds the first `sink` positions and the most recent budget - sink; reads are exact over them;
// evicted entries give their blocks back.
#include <gtest/gtest.h>

#include "sparse/evicting_cache_manager.h"
#include "support/methods/contract_driver.h"
#include "support/methods/naive_window.h"
#include "support/methods/step_plans.h"

namespace se::testing {
namespace {

std::unique_ptr<ContractDriver> driver(const nlohmann::json& knobs, DriverOptions options) {
    return make_driver("streamingllm", knobs, options);
}

// The rule, written out: positions kept after `len` tokens.
std::vector<int32_t> naive_kept(int32_t len, int32_t sink, int32_t budget) {
    std::vector<int32_t> kept;
    for (int32_t p = 0; p < len; ++p) {
        if (len <= budget || p < sink || p >= len - (budget - sink)) kept.push_back(p);
    }
    return kept;
}

struct Shape {
    int32_t num_heads;
    int32_t num_kv_heads;
};

class StreamingTest : public ::testing::TestWithParam<Shape> {};

TEST_P(StreamingTest, KeepsSinkAndRecentAndReadsExactlyThem) {
    const int32_t sink = 3;
    const int32_t budget = 27;
    const DriverOptions options{.num_layers = 2,
                                .num_heads = GetParam().num_heads,
                                .num_kv_heads = GetParam().num_kv_heads,
                                .head_dim = 8,
                                .block_size = 5};
    auto d = driver({{"sink", sink}, {"budget", budget}}, options);
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d->method().cache);
    const int32_t qw = options.num_heads * options.head_dim;
    const int32_t kw = options.num_kv_heads * options.head_dim;
    const int32_t group = options.num_heads / options.num_kv_heads;
    // Two ragged sequences; every token's K/V kept by position for the naive side.
    const std::vector<int32_t> prompt = {41, 13};
    std::vector<std::vector<std::vector<float>>> k_by_pos(2), v_by_pos(2);  // [seq][layer]
    for (auto& s : k_by_pos) s.assign(2, {});
    for (auto& s : v_by_pos) s.assign(2, {});
    std::vector<int32_t> len = {0, 0};
    uint64_t seed = 1;
    auto run = [&](StepPlan plan) {
        const auto inputs = d->random_inputs(plan.num_tokens(), seed++);
        int32_t row = 0;
        for (const StepSeq& s : plan.seqs) {
            const auto i = static_cast<size_t>(s.seq_id - 1);
            for (int32_t l = 0; l < 2; ++l) {
                k_by_pos[i][l].insert(k_by_pos[i][l].end(), inputs[l].k.begin() + row * kw,
                                      inputs[l].k.begin() + (row + s.num_new_tokens) * kw);
                v_by_pos[i][l].insert(v_by_pos[i][l].end(), inputs[l].v.begin() + row * kw,
                                      inputs[l].v.begin() + (row + s.num_new_tokens) * kw);
            }
            row += s.num_new_tokens;
        }
        const auto outs = d->step(plan, inputs);
        return std::make_pair(inputs, outs);
    };
    // Prefill in chunks of 16, then decode steps whose outputs are checked.
    for (const StepPlan& plan : prefill_plans(prompt, 16)) run(plan);
    len = prompt;
    for (int32_t step = 0; step < 20; ++step) {
        // Before the step each layer holds the naive set; the step's query reads it plus itself.
        std::vector<std::vector<int32_t>> before;
        for (int32_t i = 0; i < 2; ++i) {
            before.push_back(naive_kept(len[i], sink, budget));
            for (int32_t l = 0; l < 2; ++l) {
                const auto pos = cache.entry_positions(i + 1, cache.lane(l));
                ASSERT_EQ(std::vector<int32_t>(pos.begin(), pos.end()), before[i])
                    << "seq " << i << " layer " << l << " after " << len[i] << " tokens";
                const int64_t blocks = cache.kv().block_table(i + 1, cache.lane(l)).size();
                EXPECT_EQ(blocks, (before[i].size() + 4) / 5) << "blocks not freed";
            }
        }
        const auto [inputs, outs] = run(decode_plan(len));
        for (int32_t i = 0; i < 2; ++i) {
            std::vector<int32_t> read = before[i];
            read.push_back(len[i]);
            for (int32_t l = 0; l < 2; ++l) {
                for (int32_t h = 0; h < options.num_heads; ++h) {
                    const int32_t g = h / group;
                    std::vector<const float*> ks, vs;
                    for (int32_t p : read) {
                        ks.push_back(k_by_pos[i][l].data() + p * kw + g * options.head_dim);
                        vs.push_back(v_by_pos[i][l].data() + p * kw + g * options.head_dim);
                    }
                    const auto want =
                        naive_attention(inputs[l].q.data() + i * qw + h * options.head_dim, ks, vs,
                                        options.head_dim, d->args().scale);
                    for (int32_t x = 0; x < options.head_dim; ++x) {
                        EXPECT_NEAR(outs[l][i * qw + h * options.head_dim + x], want[x], 1e-5);
                    }
                }
            }
            ++len[i];
        }
    }
    // Pool usage equals what is retained: ceil(entries / block) per lane.
    int64_t expected_blocks = 0;
    for (int32_t i = 0; i < 2; ++i) {
        expected_blocks += 2 * ((naive_kept(len[i], sink, budget).size() + 4) / 5);
    }
    EXPECT_EQ(cache.capacity().num_blocks - cache.capacity().num_free_blocks, expected_blocks);
    cache.release(1);
    cache.release(2);
    EXPECT_EQ(cache.capacity().num_free_blocks, cache.capacity().num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Gqa, StreamingTest,
                         ::testing::Values(Shape{2, 2}, Shape{8, 2}, Shape{8, 1}),
                         [](const auto& info) {
                             return "G" +
                                    std::to_string(info.param.num_heads / info.param.num_kv_heads);
                         });

TEST(StreamingKnobsTest, BudgetMustLeaveARecentWindow) {
    auto d = ContractDriver::create("streamingllm", {{"sink", 8}, {"budget", 8}});
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("'budget'"), std::string::npos) << d.status().to_string();
}

}  // namespace
}  // namespace se::testing
