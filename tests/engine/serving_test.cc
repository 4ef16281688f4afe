// The serving core on the real default model: batching, chunking, the prefix cache and
// preemption never change a request's greedy output.
#include <gtest/gtest.h>

#include <random>

#include "engine/engine.h"
#include "model/model_resolver.h"
#include "support/greedy_params.h"

namespace se::testing {
namespace {

EngineConfig smollm2_config() {
    auto path = resolve_model_path("smollm2-135m");
    SE_CHECK(path.ok(), "%s (run scripts/fetch-model)", path.status().to_string().c_str());
    EngineConfig config;
    config.load.model = path.value();
    config.sparse_method = "dense";
    config.kv_cache_memory_bytes = int64_t{512} << 20;
    config.num_threads = 2;
    return config;
}

std::unique_ptr<Engine> make_engine(const EngineConfig& config) {
    auto engine = Engine::create(config);
    SE_CHECK(engine.ok(), "%s", engine.status().to_string().c_str());
    return std::move(engine).value();
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int32_t len) {
    std::vector<int32_t> p(static_cast<size_t>(len));
    // Ordinary tokens (ids below 17 are special).
    for (int32_t& t : p) t = 17 + static_cast<int32_t>(rng() % 40000);
    return p;
}

std::vector<std::vector<int32_t>> tokens_of(const std::vector<RequestOutput>& outs) {
    std::vector<std::vector<int32_t>> t;
    for (const auto& o : outs) t.push_back(o.token_ids);
    return t;
}

TEST(ServingTest, SixteenConcurrentRequestsMatchTheirSoloRuns) {
    std::mt19937 rng(7);
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t len : {3, 17, 40, 64, 5, 99, 128, 31, 16, 77, 200, 1, 50, 8, 150, 33}) {
        prompts.push_back(random_prompt(rng, len));
    }
    EngineConfig config = smollm2_config();
    config.enable_prefix_caching = false;
    auto engine = make_engine(config);
    auto batched = engine->generate(prompts, greedy(24));
    ASSERT_TRUE(batched.ok());
    for (size_t i = 0; i < prompts.size(); ++i) {
        auto alone = engine->generate({prompts[i]}, greedy(24));
        ASSERT_TRUE(alone.ok());
        EXPECT_EQ(batched.value()[i].token_ids, alone.value()[0].token_ids) << "request " << i;
    }
}

TEST(ServingTest, OutputsDoNotDependOnTheChunkSize) {
    std::mt19937 rng(11);
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t len : {130, 300, 64, 17}) prompts.push_back(random_prompt(rng, len));
    std::vector<std::vector<std::vector<int32_t>>> results;
    for (int32_t chunk : {16, 64, 4096}) {
        EngineConfig config = smollm2_config();
        config.enable_prefix_caching = false;
        config.scheduler.prefill_chunk_size = chunk;
        auto engine = make_engine(config);
        auto out = engine->generate(prompts, greedy(16));
        ASSERT_TRUE(out.ok());
        results.push_back(tokens_of(out.value()));
    }
    EXPECT_EQ(results[0], results[2]) << "chunk 16 vs unchunked";
    EXPECT_EQ(results[1], results[2]) << "chunk 64 vs unchunked";
}

TEST(ServingTest, SharedPrefixIsPrefilledOnceAndChangesNothing) {
    std::mt19937 rng(3);
    const std::vector<int32_t> prefix = random_prompt(rng, 1000);
    auto first = prefix;
    auto second = prefix;
    for (int32_t t : random_prompt(rng, 12)) first.push_back(t);
    for (int32_t t : random_prompt(rng, 20)) second.push_back(t);

    auto cached = make_engine(smollm2_config());
    ASSERT_TRUE(cached->generate({first}, greedy(8)).ok());
    const int64_t prefilled_before = cached->stats().prefill_tokens;
    auto out = cached->generate({second}, greedy(8));
    ASSERT_TRUE(out.ok());
    // 62 whole blocks of 16 (992 tokens) are shared; the rest is computed.
    EXPECT_EQ(out.value()[0].usage.cached_tokens, 992);
    EXPECT_EQ(cached->stats().prefill_tokens - prefilled_before, 1020 - 992);
    EXPECT_EQ(cached->prefix_cache_stats().num_hit_tokens, 992);

    EngineConfig off_config = smollm2_config();
    off_config.enable_prefix_caching = false;
    auto off = make_engine(off_config);
    auto reference = off->generate({second}, greedy(8));
    ASSERT_TRUE(reference.ok());
    EXPECT_EQ(out.value()[0].token_ids, reference.value()[0].token_ids);
    EXPECT_EQ(reference.value()[0].usage.cached_tokens, 0);
}

TEST(ServingTest, PreemptedRequestsFinishWithTheSameOutput) {
    std::mt19937 rng(5);
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 8; ++i) prompts.push_back(random_prompt(rng, 60 + 13 * i));

    EngineConfig roomy = smollm2_config();
    roomy.enable_prefix_caching = false;
    auto reference = make_engine(roomy)->generate(prompts, greedy(48));
    ASSERT_TRUE(reference.ok());

    EngineConfig tight = roomy;
    // 48 blocks of 16 tokens: room for about three of these requests at a time.
    tight.kv_cache_memory_bytes = 48 * int64_t{30} * 2 * 16 * 3 * 64 * 4;
    auto engine = make_engine(tight);
    ASSERT_EQ(engine->cache_capacity().num_blocks, 48);
    auto out = engine->generate(prompts, greedy(48));
    ASSERT_TRUE(out.ok());
    EXPECT_GT(engine->metrics().num_preemptions.value(), 0);
    EXPECT_EQ(tokens_of(out.value()), tokens_of(reference.value()));
    EXPECT_EQ(engine->cache_capacity().num_free_blocks, 48);
}

}  // namespace
}  // namespace se::testing
