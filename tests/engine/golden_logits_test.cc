// Our fp32 CPU forward pass against HF transformers fp32 (eager attention) on tiny random
// checkpoints of each architecture: every position's logits within 1e-4, whether a prompt runs
// whole, in chunks, or batched with the others.
#include <gtest/gtest.h>

#include "golden_fixture.h"
#include "model_harness.h"

namespace se::testing {
namespace {

constexpr double kTolerance = 1e-4;

struct Case {
    std::string model;
    int32_t threads;
    int32_t chunk;
    int32_t block_size;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    std::string name = info.param.model + "_t" + std::to_string(info.param.threads) + "_chunk" +
                       std::to_string(info.param.chunk) + "_bs" +
                       std::to_string(info.param.block_size);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

class GoldenLogitsTest : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenLogitsTest, MatchesTransformersAtEveryPosition) {
    const Case& c = GetParam();
    const std::string dir = fixture_path("models/" + c.model);
    GoldenFixture golden(dir + "/golden");
    ModelHarness harness(dir, c.threads, c.block_size);
    const int64_t vocab = harness.config().vocab_size;

    std::vector<std::vector<int32_t>> prompts;
    for (const GoldenPrompt& p : golden.prompts()) prompts.push_back(p.ids);
    // One by one, then all together as one ragged batch.
    std::vector<std::vector<float>> alone;
    for (const auto& p : prompts) alone.push_back(harness.prefill_logits({p}, c.chunk)[0]);
    const std::vector<std::vector<float>> batched = harness.prefill_logits(prompts, c.chunk);

    for (size_t i = 0; i < prompts.size(); ++i) {
        const GoldenPrompt& p = golden.prompts()[i];
        const std::vector<float> expected = golden.f32(p.arrays.at("logits"));
        ASSERT_EQ(expected.size(), p.ids.size() * vocab);
        ASSERT_EQ(alone[i].size(), expected.size());
        EXPECT_LE(max_abs_diff(alone[i].data(), expected.data(), expected.size()), kTolerance)
            << c.model << " prompt " << p.name << " alone";
        EXPECT_LE(max_abs_diff(batched[i].data(), expected.data(), expected.size()), kTolerance)
            << c.model << " prompt " << p.name << " batched";
    }
}

INSTANTIATE_TEST_SUITE_P(
    TinyModels, GoldenLogitsTest,
    ::testing::Values(Case{"tiny-llama", 1, 4096, 16}, Case{"tiny-llama", 2, 5, 16},
                      Case{"tiny-llama", 2, 1, 32}, Case{"tiny-llama-tied", 2, 4096, 16},
                      Case{"tiny-llama-tied", 1, 3, 32}, Case{"tiny-qwen2", 2, 4096, 16},
                      Case{"tiny-qwen2", 1, 7, 16}, Case{"tiny-qwen3", 2, 4096, 16},
                      Case{"tiny-qwen3", 2, 6, 32}),
    case_name);

}  // namespace
}  // namespace se::testing
