// What every registered method must do, checked through the contract alone (no method's code is
// named here): with a budget covering the whole context it computes exactly what dense computes;
// batching and chunked prefill never change a request's output; knob errors name the knob; the
// engine serves it. Method-specific rules live in tests/methods/<name>/.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine.h"
#include "support/methods/contract_driver.h"
#include "support/methods/method_harness.h"
#include "support/methods/step_plans.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

std::vector<std::string> sparse_methods() {
    std::vector<std::string> ids;
    for (const std::string& id : builtin_methods().ids()) {
        if (id != "dense") ids.push_back(id);
    }
    return ids;
}

std::unique_ptr<MethodHarness> harness(const std::string& method, const nlohmann::json& knobs) {
    auto h = MethodHarness::create(method, knobs);
    SE_CHECK(h.ok(), "%s", h.status().to_string().c_str());
    return std::move(h).value();
}

std::vector<std::vector<int32_t>> ragged_prompts() {
    std::vector<std::vector<int32_t>> prompts;
    uint64_t seed = 100;
    for (int32_t len : {37, 150, 9, 96, 211}) prompts.push_back(random_tokens(seed++, len, 96));
    return prompts;
}

double worst_diff(const HarnessRun& a, const HarnessRun& b) {
    double worst = 0.0;
    for (size_t i = 0; i < a.logits.size(); ++i) {
        for (size_t s = 0; s < a.logits[i].size(); ++s) {
            const auto& x = a.logits[i][s];
            const auto& y = b.logits[i][s];
            for (size_t v = 0; v < x.size(); ++v) {
                const double d = std::fabs(double{x[v]} - y[v]);
                worst = std::isnan(d) ? INFINITY : std::max(worst, d);
            }
        }
    }
    return worst;
}

class AllMethodsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AllMethodsTest, ABudgetCoveringTheContextComputesWhatDenseComputes) {
    const auto prompts = ragged_prompts();
    // The dense run follows the same tokens (teacher forcing through greedy choices of dense).
    const HarnessRun dense = harness("dense", nlohmann::json::object())->run(prompts, 32, 12);
    const HarnessRun sparse = harness(GetParam(), {{"budget", 4096}})->run(prompts, 32, 12);
    ASSERT_EQ(sparse.tokens, dense.tokens);
    EXPECT_LE(worst_diff(sparse, dense), 1e-5);
}

TEST_P(AllMethodsTest, BatchingAndChunkingNeverChangeAnOutput) {
    const auto prompts = ragged_prompts();
    const nlohmann::json knobs = {{"budget", 64}};
    const HarnessRun batched = harness(GetParam(), knobs)->run(prompts, 32, 16);
    for (size_t i = 0; i < prompts.size(); ++i) {
        const HarnessRun alone = harness(GetParam(), knobs)->run({prompts[i]}, 32, 16);
        EXPECT_EQ(alone.tokens[0], batched.tokens[i]) << "prompt " << i;
        ASSERT_EQ(alone.logits[0].size(), batched.logits[i].size());
        for (size_t s = 0; s < alone.logits[0].size(); ++s) {
            EXPECT_EQ(alone.logits[0][s], batched.logits[i][s]) << "prompt " << i << " step " << s;
        }
    }
}

TEST_P(AllMethodsTest, SmallBudgetsChangeTheResult) {
    // The method really sparsifies: with a budget far below the context the logits move.
    const auto prompts = ragged_prompts();
    const HarnessRun dense = harness("dense", nlohmann::json::object())->run(prompts, 32, 8);
    const HarnessRun sparse = harness(GetParam(), {{"budget", 40}})->run(prompts, 32, 8);
    EXPECT_GT(worst_diff(sparse, dense), 1e-4);
}

TEST_P(AllMethodsTest, UnknownKnobsAndImpossibleBudgetsAreNamed) {
    auto unknown = MethodHarness::create(GetParam(), {{"no_such_knob", 1}});
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.status().message().find("no_such_knob"), std::string::npos)
        << unknown.status().to_string();
    auto tiny = MethodHarness::create(GetParam(), {{"budget", 0}});
    ASSERT_FALSE(tiny.ok());
    EXPECT_NE(tiny.status().message().find("budget"), std::string::npos)
        << tiny.status().to_string();
    auto wrong_type = MethodHarness::create(GetParam(), {{"budget", "many"}});
    ASSERT_FALSE(wrong_type.ok());
    EXPECT_NE(wrong_type.status().message().find("budget"), std::string::npos);
}

TEST_P(AllMethodsTest, TheEngineServesMixedLengthsAsIfEachRanAlone) {
    TempDir dir;
    write_dummy_llama(dir);  // the harness model: 6 layers, 8 heads, 2 KV heads, dim 16
    EngineConfig ec;
    ec.load = {.model = dir.path().string(), .load_format = "dummy", .dtype = "float32"};
    ec.sparse_method = GetParam();
    ec.sparse_config = {{"budget", 64}};
    ec.kv_cache_memory_bytes = int64_t{32} << 20;
    ec.num_threads = 1;
    ec.scheduler.prefill_chunk_size = 32;
    ec.scheduler.max_num_batched_tokens = 4096;
    auto engine = Engine::create(ec);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    const auto prompts = ragged_prompts();
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.ignore_eos = true;
    greedy.max_tokens = 12;
    auto batched = (*engine)->generate(prompts, greedy);
    ASSERT_TRUE(batched.ok()) << batched.status().to_string();
    for (size_t i = 0; i < prompts.size(); ++i) {
        auto alone = (*engine)->generate({prompts[i]}, greedy);
        ASSERT_TRUE(alone.ok());
        EXPECT_EQ(alone.value()[0].token_ids, batched.value()[i].token_ids) << "prompt " << i;
        EXPECT_EQ(batched.value()[i].token_ids.size(), 12u);
    }
    // Full-history methods keep finished prompts' blocks in the prefix cache; dropping it must
    // free everything (a block a finished request still held would stay in use).
    (*engine)->flush_prefix_cache();
    EXPECT_EQ((*engine)->cache_capacity().num_free_blocks, (*engine)->cache_capacity().num_blocks)
        << "finished requests left blocks behind";
}

// The model writes a layer's keys and values itself, in the kernel that rotates the keys, when the
// method offers a plain store, and then never calls store for the layer. A method that offers one
// must end every step as store would have left it: each layer's outputs over chunked prefill and
// decode steps (evictions included, at a budget below the context) equal those of a driver
// whose every layer stores through store, bit for bit.
void expect_plain_stores_keep_what_store_keeps(const std::string& method,
                                               const nlohmann::json& knobs) {
    DriverOptions stored;
    stored.plain_stores = false;
    const auto plain = make_driver(method, knobs);
    const auto through_store = make_driver(method, knobs, stored);
    uint64_t seed = 1;
    for (const StepPlan& plan : prefill_then_decode({45, 29}, 16, 8)) {
        const auto inputs = plain->random_inputs(static_cast<int32_t>(plan.num_tokens()), seed++);
        EXPECT_EQ(plain->step(plan, inputs), through_store->step(plan, inputs));
    }
}

TEST_P(AllMethodsTest, APlainStoreKeepsWhatStoreKeeps) {
    expect_plain_stores_keep_what_store_keeps(GetParam(), {{"budget", 40}});
}

TEST(DenseMethod, APlainStoreKeepsWhatStoreKeeps) {
    expect_plain_stores_keep_what_store_keeps("dense", nlohmann::json::object());
}

INSTANTIATE_TEST_SUITE_P(Registered, AllMethodsTest, ::testing::ValuesIn(sparse_methods()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace se::testing
