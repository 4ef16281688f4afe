// Greedy generation through the whole engine (scheduler, dense method, sampler) reproduces
// transformers' greedy tokens on the tiny checkpoints.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "golden_fixture.h"

namespace se::testing {
namespace {

class GoldenGreedyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenGreedyTest, EngineReproducesTransformersGreedyTokens) {
    const std::string dir = fixture_path("models/" + GetParam());
    GoldenFixture golden(dir + "/golden");
    EngineConfig config;
    config.load.model = dir;
    config.sparse_method = "dense";
    config.kv_cache_memory_bytes = int64_t{64} << 20;
    config.num_threads = 2;
    auto engine = Engine::create(config);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    for (const GoldenPrompt& p : golden.prompts()) {
        if (p.greedy_ids.empty()) continue;
        SamplingParams params;
        params.temperature = 0.0f;
        params.ignore_eos = true;
        params.max_tokens = static_cast<int32_t>(p.greedy_ids.size());
        auto out = (*engine)->generate({p.ids}, params);
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        EXPECT_EQ(out.value()[0].token_ids, p.greedy_ids) << GetParam() << " " << p.name;
        EXPECT_EQ(out.value()[0].finish_reason, FinishReason::kLength);
    }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, GoldenGreedyTest,
                         ::testing::Values("tiny-llama", "tiny-llama-tied", "tiny-qwen2",
                                           "tiny-qwen3"),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

}  // namespace
}  // namespace se::testing
