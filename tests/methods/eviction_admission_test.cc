// Physical eviction is real: with the same KV memory, the engine runs more requests at once under
// an evicting method than under dense, because compaction returns blocks to the pool and the
// method's memory oracle reports them.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "support/methods/method_harness.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

EngineConfig small_pool_config(const TempDir& dir, const std::string& method,
                               const nlohmann::json& knobs) {
    EngineConfig ec;
    ec.load = {.model = dir.path().string(), .load_format = "dummy", .dtype = "float32"};
    ec.sparse_method = method;
    ec.sparse_config = knobs;
    // 6 layers x K,V x 16 tokens x 2 heads x 16 dims x 4 bytes = 24 KiB per 16 tokens of all
    // layers: 60 such blocks, 960 tokens, about four requests of 240 tokens kept in full.
    ec.kv_cache_memory_bytes = int64_t{60} * 24576;
    ec.num_threads = 1;
    ec.enable_prefix_caching = false;
    ec.scheduler.prefill_chunk_size = 32;
    return ec;
}

struct Served {
    double peak_running = 0.0;  // most requests running in one step
    double preemptions = 0.0;
};

// Serves 8 requests of 200 + 40 tokens.
Served serve(const std::string& method, const nlohmann::json& knobs) {
    TempDir dir;
    write_dummy_llama(dir);  // the harness model: 6 layers, 8 heads, 2 KV heads, dim 16
    auto engine = Engine::create(small_pool_config(dir, method, knobs));
    SE_CHECK(engine.ok(), "%s", engine.status().to_string().c_str());
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = 40;
    for (int32_t i = 0; i < 8; ++i) {
        (*engine)->add_request(random_tokens(50 + i, 200, 96), params);
    }
    Served served;
    size_t finished = 0;
    for (int32_t step = 0; step < 10000 && finished < 8; ++step) {
        (*engine)->step();
        served.peak_running =
            std::max(served.peak_running, (*engine)->metrics().num_requests_running.value());
        for (const RequestOutput& out : (*engine)->take_finished()) {
            EXPECT_EQ(out.token_ids.size(), 40u);
            ++finished;
        }
    }
    EXPECT_EQ(finished, 8u);
    served.preemptions = (*engine)->metrics().num_preemptions.value();
    return served;
}

TEST(EvictionAdmissionTest, CompactionLetsMoreRequestsRunAtOnce) {
    // Dense needs 8 x 15 blocks of the 60: it must preempt (and still finish everything).
    const Served dense = serve("dense", nlohmann::json::object());
    EXPECT_GT(dense.preemptions, 0.0);
    // Evicting to 32 entries per layer, every request fits at once and none is preempted.
    const Served streaming = serve("streamingllm", {{"sink", 4}, {"budget", 32}});
    EXPECT_EQ(streaming.preemptions, 0.0);
    EXPECT_EQ(streaming.peak_running, 8.0);
}

TEST(EvictionAdmissionTest, CapacityInTokensIsTheSameWhateverTheLanes) {
    // The same memory holds 960 tokens of full history whether blocks hold all layers (dense),
    // one layer (token-shared lanes) or one layer's KV head (per-head lanes).
    TempDir dir;
    write_dummy_llama(dir);
    for (const auto& [method, knobs] :
         std::vector<std::pair<std::string, nlohmann::json>>{{"dense", nlohmann::json::object()},
                                                             {"snapkv", {{"budget", 64}}},
                                                             {"adakv", {{"budget", 64}}}}) {
        auto engine = Engine::create(small_pool_config(dir, method, knobs));
        ASSERT_TRUE(engine.ok()) << engine.status().to_string();
        EXPECT_EQ((*engine)->kv_capacity_tokens(), 960) << method;
    }
}

}  // namespace
}  // namespace se::testing
