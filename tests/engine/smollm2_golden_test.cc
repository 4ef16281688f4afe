// The default model, SmolLM2-135M-Instruct Q4_1, against transformers running the same weights
// dequantized to fp32: logits within 2e-3 and 32 greedy tokens identical per prompt.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "golden_fixture.h"
#include "model/model_resolver.h"
#include "model_harness.h"

namespace se::testing {
namespace {

constexpr double kTolerance = 2e-3;

std::string default_model_path() {
    auto path = resolve_model_path("smollm2-135m");
    SE_CHECK(path.ok(), "%s (run scripts/fetch-model)", path.status().to_string().c_str());
    return path.value();
}

GoldenFixture smollm2_golden() {
    return GoldenFixture(fixture_path("models/smollm2-135m/golden"));
}

TEST(SmolLM2GoldenTest, LogitsMatchTransformers) {
    GoldenFixture golden = smollm2_golden();
    ModelHarness harness(default_model_path(), 2);
    const int64_t vocab = harness.config().vocab_size;
    std::vector<std::vector<int32_t>> prompts;
    for (const GoldenPrompt& p : golden.prompts()) prompts.push_back(p.ids);
    // Whole prompts in one ragged batch, and again in chunks of 7 tokens.
    for (int32_t chunk : {4096, 7}) {
        const auto logits = harness.prefill_logits(prompts, chunk);
        for (size_t i = 0; i < prompts.size(); ++i) {
            const GoldenPrompt& p = golden.prompts()[i];
            const auto len = static_cast<int64_t>(p.ids.size());
            const std::vector<float> last = golden.f32(p.arrays.at("last_logits"));
            EXPECT_LE(max_abs_diff(&logits[i][(len - 1) * vocab], last.data(), vocab), kTolerance)
                << p.name << " chunk " << chunk;
            const std::vector<float> first64 = golden.f32(p.arrays.at("logits_first64"));
            const std::vector<int32_t> argmax = golden.i32(p.arrays.at("argmax"));
            const std::vector<float> margin = golden.f32(p.arrays.at("argmax_margin"));
            for (int64_t t = 0; t < len; ++t) {
                EXPECT_LE(max_abs_diff(&logits[i][t * vocab], &first64[t * 64], 64), kTolerance)
                    << p.name << " position " << t;
                const float* row = &logits[i][t * vocab];
                const auto best = std::max_element(row, row + vocab) - row;
                if (margin[t] > 2 * kTolerance) {
                    EXPECT_EQ(best, argmax[t]) << p.name << " position " << t;
                }
            }
        }
    }
}

TEST(SmolLM2GoldenTest, GreedyTokensMatchTransformersInABatch) {
    GoldenFixture golden = smollm2_golden();
    EngineConfig config;
    config.load.model = default_model_path();
    config.sparse_method = "dense";
    config.kv_cache_memory_bytes = int64_t{256} << 20;
    config.num_threads = 2;
    auto engine = Engine::create(config);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    std::vector<std::vector<int32_t>> prompts;
    for (const GoldenPrompt& p : golden.prompts()) prompts.push_back(p.ids);
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = 32;
    auto out = (*engine)->generate(prompts, params);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(out.value()[i].token_ids, golden.prompts()[i].greedy_ids)
            << golden.prompts()[i].name;
    }
}

}  // namespace
}  // namespace se::testing
