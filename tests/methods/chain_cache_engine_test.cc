// Chain Cache through the engine, for eviction methods: a conversation that names a chain
// prefills only each turn's new tokens and computes exactly what one never-ending sequence of the
// method computes (the reference drives the method directly: MethodHarness::extend); mismatches
// invalidate and run from scratch; busy and gone are refused; idle chains are reclaimed (LRU)
// before any running request is preempted; no block leaks through random chain traffic.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "support/methods/engine_runs.h"
#include "support/methods/method_harness.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

constexpr int32_t kVocab = 96;  // the harness model's
constexpr int32_t kChunk = 64;  // prefill chunk of the engine and of the reference
constexpr int32_t kOutput = 6;  // tokens per turn

EngineConfig chain_config(const TempDir& dir, const std::string& method,
                          const nlohmann::json& knobs) {
    return harness_engine_config(dir, method, knobs, kChunk);
}

Expected<RequestOutput> run_one(Engine& engine, std::vector<int32_t> prompt,
                                const std::string& chain_id, const std::string& salt = "",
                                int32_t max_tokens = kOutput) {
    return run_to_end(engine, std::move(prompt), greedy(max_tokens),
                      {.on_delta = {}, .cache_salt = salt, .chain_id = chain_id});
}

RequestOutput must_run(Engine& engine, std::vector<int32_t> prompt, const std::string& chain_id,
                       const std::string& salt = "") {
    auto out = run_one(engine, std::move(prompt), chain_id, salt);
    SE_CHECK(out.ok(), "%s", out.status().to_string().c_str());
    return std::move(out).value();
}

// The next turn's prompt: the history, the reply, then a new user message.
std::vector<int32_t> next_turn(std::vector<int32_t> prompt, const RequestOutput& out, uint64_t seed,
                               int32_t len) {
    prompt.insert(prompt.end(), out.token_ids.begin(), out.token_ids.end());
    const std::vector<int32_t> user = random_tokens(seed, len, kVocab);
    prompt.insert(prompt.end(), user.begin(), user.end());
    return prompt;
}

struct ChainMethod {
    std::string id;
    nlohmann::json knobs;
};

class ChainConversationTest : public ::testing::TestWithParam<ChainMethod> {};

TEST_P(ChainConversationTest, TenTurnsPrefillOnlyNewTokensAndMatchOneContinuousSequence) {
    const ChainMethod& m = GetParam();
    TempDir dir;
    write_dummy_llama(dir);
    auto engine = make_engine(chain_config(dir, m.id, m.knobs));
    auto reference = MethodHarness::create(m.id, m.knobs, {.max_step_tokens = kChunk});
    ASSERT_TRUE(reference.ok()) << reference.status().to_string();

    std::vector<int32_t> prompt = random_tokens(1, 150, kVocab);
    int32_t processed = 0;
    for (int32_t turn = 0; turn < 10; ++turn) {
        SCOPED_TRACE("turn " + std::to_string(turn));
        const int64_t prefilled_before = engine->stats().prefill_tokens;
        const RequestOutput out = must_run(*engine, prompt, "conversation");
        ASSERT_TRUE(out.chain.has_value());
        EXPECT_EQ(out.chain->status, turn == 0 ? ChainStatus::kCreated : ChainStatus::kResumed);
        EXPECT_EQ(out.usage.reused_tokens, processed);
        EXPECT_EQ(out.usage.cached_tokens, processed);
        // Exactly the tokens the chain had not processed: the last reply token and the new
        // user message.
        EXPECT_EQ(engine->stats().prefill_tokens - prefilled_before,
                  static_cast<int64_t>(prompt.size()) - processed);
        const std::vector<int32_t> expected =
            (*reference)->extend(1, prompt, processed, kChunk, kOutput - 1);
        EXPECT_EQ(out.token_ids, expected);
        processed = static_cast<int32_t>(prompt.size()) + kOutput - 1;
        prompt = next_turn(prompt, out, 100 + turn, 20 + 7 * turn);
    }
    const ChainCacheStats stats = engine->chain_stats();
    EXPECT_EQ(stats.num_idle, 1);
    EXPECT_EQ(stats.num_resumed, 9);
    // What stays is the chain's state alone, and it is the method's compacted state: far less
    // than the history in full would take (a block holds 16 entries of one layer).
    const CacheCapacity cap = engine->cache_capacity();
    EXPECT_EQ(cap.num_blocks - cap.num_free_blocks, stats.idle_blocks);
    EXPECT_LT(stats.idle_blocks * cap.block_size * 3,
              int64_t{processed} * engine->model_config().num_layers);
    EXPECT_TRUE(engine->release_chain("conversation").ok());
    EXPECT_EQ(engine->cache_capacity().num_free_blocks, cap.num_blocks);
}

INSTANTIATE_TEST_SUITE_P(EvictionMethods, ChainConversationTest,
                         ::testing::Values(ChainMethod{"snapkv", {{"budget", 64}}},
                                           ChainMethod{"h2o", {{"budget", 64}}}),
                         [](const auto& info) { return info.param.id; });

class ChainOutcomeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        write_dummy_llama(dir_);
        engine_ = make_engine(chain_config(dir_, "snapkv", knobs_));
    }
    // What a request computes with no chain, on an engine of its own.
    std::vector<int32_t> fresh_output(const std::vector<int32_t>& prompt) {
        auto engine = make_engine(chain_config(dir_, "snapkv", knobs_));
        return must_run(*engine, prompt, "").token_ids;
    }
    int64_t used_blocks() const {
        const CacheCapacity cap = engine_->cache_capacity();
        return cap.num_blocks - cap.num_free_blocks;
    }

    TempDir dir_;
    nlohmann::json knobs_ = {{"budget", 48}};
    std::unique_ptr<Engine> engine_;
};

TEST_F(ChainOutcomeTest, AnEditedHistoryInvalidatesTheChainAndRunsFromScratch) {
    const std::vector<int32_t> first = random_tokens(3, 120, kVocab);
    const RequestOutput turn1 = must_run(*engine_, first, "c");
    std::vector<int32_t> edited = next_turn(first, turn1, 4, 30);
    edited[10] = first[10] == 1 ? 2 : 1;

    const int64_t prefilled_before = engine_->stats().prefill_tokens;
    const RequestOutput turn2 = must_run(*engine_, edited, "c");
    EXPECT_EQ(turn2.chain->status, ChainStatus::kInvalidated);
    EXPECT_EQ(turn2.usage.reused_tokens, 0);
    EXPECT_EQ(engine_->stats().prefill_tokens - prefilled_before,
              static_cast<int64_t>(edited.size()));
    EXPECT_EQ(turn2.token_ids, fresh_output(edited));
    // The old state went back to the pool: only the new turn's state is held.
    EXPECT_EQ(engine_->chain_stats().num_idle, 1);
    EXPECT_EQ(used_blocks(), engine_->chain_stats().idle_blocks);
    // The chain now continues from the edited history.
    const RequestOutput turn3 = must_run(*engine_, next_turn(edited, turn2, 5, 10), "c");
    EXPECT_EQ(turn3.chain->status, ChainStatus::kResumed);
}

TEST_F(ChainOutcomeTest, AnotherFingerprintInvalidatesTheChain) {
    const std::vector<int32_t> first = random_tokens(6, 100, kVocab);
    const RequestOutput turn1 = must_run(*engine_, first, "c");
    const std::vector<int32_t> second = next_turn(first, turn1, 7, 20);
    // A different salt is a different fingerprint (as other knobs or another model would be).
    const RequestOutput salted = must_run(*engine_, second, "c", "other-salt");
    EXPECT_EQ(salted.chain->status, ChainStatus::kInvalidated);
    EXPECT_EQ(salted.usage.reused_tokens, 0);
    EXPECT_EQ(salted.token_ids, fresh_output(second));
}

TEST_F(ChainOutcomeTest, ABusyChainRefusesASecondRequest) {
    const std::vector<int32_t> prompt = random_tokens(8, 80, kVocab);
    auto first = engine_->add_request(prompt, greedy(kOutput), {.chain_id = "c"});
    ASSERT_TRUE(first.ok());
    auto second = engine_->add_request(prompt, greedy(kOutput), {.chain_id = "c"});
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(second.status().message().find("busy"), std::string::npos);
    // The first still runs to the end and parks its state.
    std::vector<RequestOutput> done;
    while (engine_->has_work()) {
        engine_->step();
        for (RequestOutput& out : engine_->take_finished()) done.push_back(std::move(out));
    }
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].token_ids.size(), static_cast<size_t>(kOutput));
    EXPECT_EQ(engine_->chain_stats().num_idle, 1);
}

TEST_F(ChainOutcomeTest, ACancelledOwnerFreesTheChain) {
    const std::vector<int32_t> first = random_tokens(9, 100, kVocab);
    const RequestOutput turn1 = must_run(*engine_, first, "c");
    const std::vector<int32_t> second = next_turn(first, turn1, 10, 20);
    auto id = engine_->add_request(second, greedy(kOutput), {.chain_id = "c"});
    ASSERT_TRUE(id.ok());
    engine_->step();
    engine_->abort(*id);
    const std::vector<RequestOutput> done = engine_->take_finished();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].finish_reason, FinishReason::kAbort);
    EXPECT_EQ(used_blocks(), 0);
    EXPECT_EQ(engine_->chain_stats().num_idle + engine_->chain_stats().num_active, 0);
    EXPECT_EQ(must_run(*engine_, second, "c").chain->status, ChainStatus::kCreated);
}

TEST_F(ChainOutcomeTest, AChainReclaimedOverTheCapacityIsGone) {
    EngineConfig ec = chain_config(dir_, "snapkv", knobs_);
    ec.chain_cache = {.max_idle_chains = 1, .max_idle_pool_fraction = 1.0};
    auto engine = make_engine(ec);
    const std::vector<int32_t> a = random_tokens(11, 90, kVocab);
    const RequestOutput a1 = must_run(*engine, a, "a");
    must_run(*engine, random_tokens(12, 90, kVocab), "b");  // parks b: a is the older idle chain
    auto again = run_one(*engine, next_turn(a, a1, 13, 10), "a");
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.status().code(), StatusCode::kGone);
    EXPECT_NE(again.status().message().find("'a'"), std::string::npos);
    EXPECT_EQ(engine->chain_stats().num_reclaimed, 1);
}

TEST_F(ChainOutcomeTest, ChainsNeedAMethodThatEvicts) {
    auto engine = make_engine(chain_config(dir_, "dense", nlohmann::json::object()));
    auto refused =
        engine->add_request(random_tokens(14, 20, kVocab), greedy(kOutput), {.chain_id = "c"});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("chain_id"), std::string::npos);
}

TEST(ChainPressureTest, IdleChainsAreReclaimedOldestFirstBeforeAnyPreemption) {
    TempDir dir;
    write_dummy_llama(dir);
    EngineConfig ec = chain_config(dir, "snapkv", {{"budget", 48}});
    ec.kv_cache_memory_bytes = int64_t{240} * 4096;  // 240 blocks of 16 entries of one layer
    auto engine = make_engine(ec);
    const int64_t pool = engine->cache_capacity().num_blocks;
    // Park chains until they hold over half of the pool.
    std::vector<std::string> parked;
    std::vector<std::vector<int32_t>> histories;
    while (2 * engine->chain_stats().idle_blocks <= pool) {
        const std::string id = "c" + std::to_string(parked.size());
        std::vector<int32_t> prompt = random_tokens(20 + parked.size(), 100, kVocab);
        const RequestOutput out = must_run(*engine, prompt, id);
        parked.push_back(id);
        histories.push_back(next_turn(prompt, out, 50 + parked.size(), 8));
    }
    ASSERT_GE(parked.size(), 3u);
    // A request whose prompt needs most of the pool before its compaction.
    const int32_t free_tokens = static_cast<int32_t>(engine->cache_capacity().num_free_blocks /
                                                     engine->model_config().num_layers * 16);
    const RequestOutput big = must_run(*engine, random_tokens(77, free_tokens + 40, kVocab), "");
    EXPECT_EQ(big.token_ids.size(), static_cast<size_t>(kOutput));
    EXPECT_EQ(engine->metrics().num_preemptions.value(), 0.0);
    const int64_t reclaimed = engine->chain_stats().num_reclaimed;
    ASSERT_GE(reclaimed, 1);
    ASSERT_LT(reclaimed, static_cast<int64_t>(parked.size()));
    // The oldest went first: exactly the first `reclaimed` chains are gone.
    for (size_t i = 0; i < parked.size(); ++i) {
        SCOPED_TRACE(parked[i]);
        auto out = run_one(*engine, histories[i], parked[i]);
        if (static_cast<int64_t>(i) < reclaimed) {
            EXPECT_EQ(out.status().code(), StatusCode::kGone);
        } else {
            ASSERT_TRUE(out.ok()) << out.status().to_string();
            EXPECT_EQ(out->chain->status, ChainStatus::kResumed);
        }
    }
}

TEST(ChainChurnTest, RandomChainTrafficLeaksNoBlocks) {
    TempDir dir;
    write_dummy_llama(dir);
    EngineConfig ec = chain_config(dir, "snapkv", {{"budget", 40}});
    ec.kv_cache_memory_bytes = int64_t{160} * 4096;  // tight: reclamation and preemption happen
    ec.chain_cache = {.max_idle_chains = 4, .max_idle_pool_fraction = 1.0};
    auto engine = make_engine(ec);
    std::mt19937_64 rng(2026);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    constexpr size_t kChains = 6;
    std::vector<std::vector<int32_t>> history(kChains);
    std::vector<int32_t> generation(kChains, 0);  // a gone id is gone for good: take a new one
    std::vector<std::optional<RequestId>> active(kChains);
    auto chain_id = [&](size_t c) { return fmt::format("c{}.{}", c, generation[c]); };
    int32_t outcomes[3] = {0, 0, 0};
    for (int32_t op = 0; op < 500; ++op) {
        const size_t c = pick(kChains);
        switch (pick(6)) {
            case 0:  // a turn that edits the history: invalidated (or created)
            case 1:
            case 2: {             // the next turn, queued beside whatever else is queued
                if (active[c]) {  // the chain is busy
                    auto refused =
                        engine->add_request(history[c], greedy(kOutput), {.chain_id = chain_id(c)});
                    EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
                    break;
                }
                if (history[c].size() > 300) history[c].clear();  // fits the pool alone
                if (!history[c].empty() && pick(3) == 0) history[c][pick(history[c].size())] = 1;
                const std::vector<int32_t> user =
                    random_tokens(rng(), 5 + static_cast<int32_t>(pick(40)), kVocab);
                history[c].insert(history[c].end(), user.begin(), user.end());
                auto rid =
                    engine->add_request(history[c], greedy(1 + static_cast<int32_t>(pick(4))),
                                        {.chain_id = chain_id(c)});
                if (rid.ok()) {
                    active[c] = *rid;
                } else {  // reclaimed while idle
                    EXPECT_EQ(rid.status().code(), StatusCode::kGone) << rid.status().to_string();
                    ++generation[c];
                    history[c].clear();
                }
                break;
            }
            case 3:  // cancel the chain's request
                if (active[c]) engine->abort(*active[c]);
                break;
            case 4:  // free the chain on request (refused while busy)
                (void)engine->release_chain(chain_id(c));
                break;
            default:  // let the engine work
                for (size_t s = pick(8); s > 0 && engine->has_work(); --s) engine->step();
        }
        for (const RequestOutput& out : engine->take_finished()) {
            ASSERT_TRUE(out.chain.has_value());
            ++outcomes[static_cast<int>(out.chain->status)];
            EXPECT_EQ(out.usage.reused_tokens > 0, out.chain->status == ChainStatus::kResumed);
            for (size_t c2 = 0; c2 < kChains; ++c2) {
                if (active[c2] != out.id) continue;
                active[c2].reset();
                if (out.finish_reason != FinishReason::kAbort) {
                    history[c2].insert(history[c2].end(), out.token_ids.begin(),
                                       out.token_ids.end());
                }
            }
        }
    }
    while (engine->has_work()) engine->step();
    engine->take_finished();
    for (size_t c = 0; c < kChains; ++c) (void)engine->release_chain(chain_id(c));
    EXPECT_EQ(engine->chain_stats().num_idle + engine->chain_stats().num_active, 0);
    EXPECT_EQ(engine->cache_capacity().num_free_blocks, engine->cache_capacity().num_blocks);
    // The traffic really exercised every outcome and the reclamation path.
    EXPECT_GT(outcomes[static_cast<int>(ChainStatus::kResumed)], 20);
    EXPECT_GT(outcomes[static_cast<int>(ChainStatus::kInvalidated)], 5);
    EXPECT_GT(outcomes[static_cast<int>(ChainStatus::kCreated)], 5);
    EXPECT_GT(engine->chain_stats().num_reclaimed, 0);
    EXPECT_GT(engine->metrics().num_preemptions.value(), 0.0);
}

}  // namespace
}  // namespace se::testing
