// Randomized serving on a tiny model: over a thousand requests with random lengths, shared
// prefixes, aborts and a small KV pool. Every request finishes exactly once, and at the end every
// block is free or held only by the prefix cache, which a flush empties.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/engine.h"
#include "golden_fixture.h"

namespace se::testing {
namespace {

EngineConfig tiny_config(int64_t num_blocks) {
    EngineConfig config;
    config.load.model = fixture_path("models/tiny-llama");
    config.sparse_method = "dense";
    config.block_size = 16;
    // tiny-llama: 3 layers x 2 kv heads x 16 dims, K and V, f32.
    config.kv_cache_memory_bytes = num_blocks * 3 * 2 * 16 * 2 * 16 * 4;
    config.num_threads = 1;
    config.scheduler = {.max_num_seqs = 8, .max_num_batched_tokens = 96, .prefill_chunk_size = 32};
    return config;
}

TEST(EnginePropertyTest, ThousandRandomRequestsLeakNothing) {
    auto created = Engine::create(tiny_config(24));
    ASSERT_TRUE(created.ok()) << created.status().to_string();
    Engine& engine = **created;
    ASSERT_EQ(engine.cache_capacity().num_blocks, 24);
    std::mt19937 rng(1234);
    auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
    std::vector<std::vector<int32_t>> bases;
    for (int i = 0; i < 5; ++i) {
        std::vector<int32_t> b(static_cast<size_t>(uniform(40, 120)));
        for (int32_t& t : b) t = uniform(0, 319);
        bases.push_back(b);
    }
    std::set<RequestId> active;
    std::map<RequestId, int> finished;
    int aborted = 0;
    auto collect = [&] {
        for (const RequestOutput& out : engine.take_finished()) {
            ++finished[out.id];
            active.erase(out.id);
            if (out.finish_reason == FinishReason::kAbort) ++aborted;
        }
    };
    int added = 0;
    while (added < 1200) {
        for (int k = uniform(0, 3); k > 0 && added < 1200; --k) {
            std::vector<int32_t> prompt;
            if (uniform(0, 9) < 4) prompt = bases[uniform(0, 4)];
            for (int n = uniform(1, 90); n > 0; --n) prompt.push_back(uniform(0, 319));
            SamplingParams params;
            params.temperature = uniform(0, 1) == 0 ? 0.0f : 0.8f;
            params.ignore_eos = uniform(0, 1) == 0;
            params.max_tokens = uniform(1, 40);
            params.seed = static_cast<uint64_t>(added);
            auto id = engine.add_request(prompt, params);
            ASSERT_TRUE(id.ok()) << id.status().to_string();
            active.insert(id.value());
            ++added;
        }
        for (int k = uniform(1, 2); k > 0; --k) engine.step();
        if (!active.empty() && uniform(0, 9) == 0) {
            auto it = active.begin();
            std::advance(it, uniform(0, static_cast<int>(active.size()) - 1));
            engine.abort(*it);
        }
        collect();
    }
    while (engine.has_work()) {
        engine.step();
        collect();
    }
    EXPECT_TRUE(active.empty());
    EXPECT_EQ(finished.size(), 1200u);
    for (const auto& [id, times] : finished) EXPECT_EQ(times, 1) << "request " << id;
    EXPECT_GT(aborted, 0);
    EXPECT_GT(engine.metrics().num_preemptions.value(), 0);
    EXPECT_GT(engine.prefix_cache_stats().num_hit_tokens, 0);

    const CacheCapacity cap = engine.cache_capacity();
    EXPECT_EQ(cap.num_free_blocks + cap.num_cached_blocks, cap.num_blocks);
    engine.flush_prefix_cache();
    EXPECT_EQ(engine.cache_capacity().num_free_blocks, cap.num_blocks);
    EXPECT_EQ(engine.cache_capacity().num_cached_blocks, 0);
}

TEST(EnginePropertyTest, AbortFreesEverythingAtAnyPoint) {
    auto created = Engine::create(tiny_config(64));
    ASSERT_TRUE(created.ok());
    Engine& engine = **created;
    const int64_t total = engine.cache_capacity().num_blocks;
    std::vector<int32_t> prompt(100, 7);
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = 30;
    std::vector<StreamDelta> deltas;
    // Waiting, mid-prefill (chunks of 32), and decoding.
    for (int steps_before_abort : {0, 1, 6}) {
        auto id = engine.add_request(
            prompt, params, {.on_delta = [&](const StreamDelta& d) { deltas.push_back(d); }});
        ASSERT_TRUE(id.ok());
        for (int s = 0; s < steps_before_abort; ++s) engine.step();
        engine.abort(id.value());
        auto done = engine.take_finished();
        ASSERT_EQ(done.size(), 1u);
        EXPECT_EQ(done[0].finish_reason, FinishReason::kAbort);
        EXPECT_EQ(done[0].error.code(), StatusCode::kCancelled);
        ASSERT_FALSE(deltas.empty());
        EXPECT_EQ(deltas.back().finish_reason, FinishReason::kAbort);
        EXPECT_FALSE(engine.has_work());
        const CacheCapacity cap = engine.cache_capacity();
        EXPECT_EQ(cap.num_free_blocks + cap.num_cached_blocks, total);
    }
}

TEST(EnginePropertyTest, MetricsCountWhatHappened) {
    auto created = Engine::create(tiny_config(64));
    ASSERT_TRUE(created.ok());
    Engine& engine = **created;
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = 5;
    auto out = engine.generate({std::vector<int32_t>(20, 3), std::vector<int32_t>(9, 4)}, params);
    ASSERT_TRUE(out.ok());
    const EngineMetrics& m = engine.metrics();
    EXPECT_EQ(m.generation_tokens.value(), 10);
    EXPECT_EQ(m.prompt_tokens.value(), 29);
    EXPECT_EQ(m.request_success[static_cast<size_t>(FinishReason::kLength)].value(), 2);
    EXPECT_EQ(m.time_to_first_token_seconds.count(), 2u);
    EXPECT_EQ(m.inter_token_latency_seconds.count(), 8u);
    EXPECT_EQ(m.e2e_request_latency_seconds.count(), 2u);
    EXPECT_EQ(m.num_requests_running.value(), 0);
    const std::string text = engine.render_metrics();
    for (const char* line :
         {"# TYPE sparse_engine:num_requests_running gauge",
          "sparse_engine:generation_tokens_total{model_name=\"",
          "sparse_engine:request_success_total{model_name=\"", "finished_reason=\"length\"} 2",
          "sparse_engine:time_to_first_token_seconds_bucket{", "le=\"+Inf\"} 2",
          "sparse_engine:kv_cache_usage_perc{", "sparse_engine:prefix_cache_queries_total{",
          "sparse_engine:num_preemptions_total{"}) {
        EXPECT_NE(text.find(line), std::string::npos) << line;
    }
}

}  // namespace
}  // namespace se::testing
