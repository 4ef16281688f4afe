// Tensor parallelism on the CPU (ranks are threads, the communicator shared memory): the engine
// split over 2 and 4 ranks computes what one rank computes, for dense and for every method (each
// rank holds its own KV heads and the methods reduce their scores across ranks), with batched,
// chunked prefill and decode, prefix-cache hits and deletes, Chain Cache conversations, pruning
// jobs on a cached prefix and on a chain, and the same KV pool accounting.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "support/methods/engine_runs.h"
#include "support/methods/method_harness.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

// 8 query heads and 4 KV heads split over up to 4 ranks; a vocabulary of 98 splits unevenly
// (25, 25, 25, 23 rows).
HarnessOptions tp_model() {
    HarnessOptions o;
    o.num_layers = 3;
    o.num_heads = 8;
    o.num_kv_heads = 4;
    o.head_dim = 16;
    o.vocab = 98;
    return o;
}

struct BatchRun {
    std::vector<std::vector<int32_t>> tokens;            // [prompt] generated tokens
    std::vector<std::vector<SampledLogprobs>> logprobs;  // [prompt][token]
    CacheCapacity capacity;                              // after the batch finished
};

// Submits every prompt at once (one batch: ragged, chunked prefill, then decode together),
// greedy with the top-5 logprobs of each token, and runs them to the end.
BatchRun run_batch(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                   int32_t max_tokens) {
    SamplingParams params = greedy(max_tokens);
    params.logprobs = 5;
    std::map<RequestId, size_t> ids;
    for (size_t i = 0; i < prompts.size(); ++i) {
        auto id = engine.add_request(prompts[i], params);
        SE_CHECK(id.ok(), "%s", id.status().to_string().c_str());
        ids[id.value()] = i;
    }
    BatchRun run;
    run.tokens.resize(prompts.size());
    run.logprobs.resize(prompts.size());
    size_t done = 0;
    while (done < prompts.size()) {
        SE_CHECK(engine.has_work());
        engine.step();
        for (RequestOutput& out : engine.take_finished()) {
            const size_t i = ids.at(out.id);
            run.tokens[i] = out.token_ids;
            run.logprobs[i] = out.logprobs;
            ++done;
        }
    }
    run.capacity = engine.cache_capacity();
    return run;
}

std::vector<std::vector<int32_t>> prompts() {
    std::vector<std::vector<int32_t>> p;
    uint64_t seed = 300;
    for (int32_t len : {45, 130, 9, 77}) p.push_back(random_tokens(seed++, len, 98));
    return p;
}

EngineConfig tp_config(const TempDir& dir, const std::string& method, const nlohmann::json& knobs,
                       int32_t tp) {
    EngineConfig ec = harness_engine_config(dir, method, knobs, /*chunk=*/32);
    ec.tensor_parallel_size = tp;
    ec.num_threads = tp;  // one core per rank
    // Each rank holds 1/tp of the KV heads: 1/tp of the memory gives every rank the pool one
    // rank has, so block counts compare.
    ec.kv_cache_memory_bytes /= tp;
    return ec;
}

// The largest difference between the two runs' logprobs of the same tokens (tokens must match).
double worst_logprob_diff(const BatchRun& a, const BatchRun& b) {
    double worst = 0.0;
    for (size_t i = 0; i < a.logprobs.size(); ++i) {
        for (size_t t = 0; t < a.logprobs[i].size(); ++t) {
            const SampledLogprobs& x = a.logprobs[i][t];
            const SampledLogprobs& y = b.logprobs[i][t];
            worst = std::max(worst, std::fabs(double{x.logprob} - y.logprob));
            for (int32_t k = 0; k < x.num_top; ++k) {
                EXPECT_EQ(x.top[k].token, y.top[k].token) << "prompt " << i << " token " << t;
                const double d = std::fabs(double{x.top[k].logprob} - y.top[k].logprob);
                worst = std::isnan(d) ? INFINITY : std::max(worst, d);
            }
        }
    }
    return worst;
}

class TensorParallelEngineTest : public ::testing::TestWithParam<int32_t> {
  protected:
    void SetUp() override { write_dummy_llama(dir_, tp_model()); }
    TempDir dir_;
};

TEST_P(TensorParallelEngineTest, DenseGivesTheSameTokensAndLogprobsAsOneRank) {
    const auto one = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), 1));
    const auto many = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), GetParam()));
    const BatchRun a = run_batch(*one, prompts(), 16);
    const BatchRun b = run_batch(*many, prompts(), 16);
    ASSERT_EQ(b.tokens, a.tokens);
    EXPECT_LT(worst_logprob_diff(a, b), 1e-4);
    EXPECT_EQ(b.capacity.num_blocks, a.capacity.num_blocks);
    EXPECT_EQ(b.capacity.num_free_blocks, a.capacity.num_free_blocks);
}

TEST_P(TensorParallelEngineTest, APrefixCacheHitOnEveryRankGivesTheSameTokens) {
    const auto one = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), 1));
    const auto many = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), GetParam()));
    // The second run of the same prompts attaches their cached prefix on every rank.
    std::vector<BatchRun> a, b;
    for (int turn = 0; turn < 2; ++turn) {
        a.push_back(run_batch(*one, prompts(), 8));
        b.push_back(run_batch(*many, prompts(), 8));
    }
    EXPECT_GT(many->prefix_cache_stats().num_hit_tokens, 0);
    EXPECT_EQ(many->prefix_cache_stats().num_hit_tokens, one->prefix_cache_stats().num_hit_tokens);
    for (int turn = 0; turn < 2; ++turn) {
        ASSERT_EQ(b[turn].tokens, a[turn].tokens) << "turn " << turn;
        EXPECT_LT(worst_logprob_diff(a[turn], b[turn]), 1e-4);
    }
}

TEST_P(TensorParallelEngineTest, DeletingACachedPrefixDeletesItOnEveryRank) {
    const auto one = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), 1));
    const auto many = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), GetParam()));
    const std::vector<int32_t> prompt = prompts()[1];
    const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 40);
    for (Engine* e : {one.get(), many.get()}) {
        ASSERT_TRUE(run_to_end(*e, prompt, greedy(4)).ok());
        auto removed = e->delete_prefix_subtree(head);
        ASSERT_TRUE(removed.ok()) << removed.status().to_string();
        EXPECT_GT(removed.value(), 0);
        ASSERT_TRUE(run_to_end(*e, prompt, greedy(4)).ok());
    }
    // The ranks dropped the same blocks (the mirrored manager checks that they agree), so the
    // second run hit what one rank hits: the blocks before the deleted subtree.
    EXPECT_EQ(many->prefix_cache_stats().num_hit_tokens, one->prefix_cache_stats().num_hit_tokens);
    EXPECT_EQ(many->cache_capacity().num_free_blocks, one->cache_capacity().num_free_blocks);
}

// Runs a pruning job (it runs at the start of the next step) and returns its result.
PruneJobResult run_prune(Engine& engine, PruneJobRequest request) {
    auto id = engine.submit_prune(std::move(request));
    SE_CHECK(id.ok(), "%s", id.status().to_string().c_str());
    engine.step();
    return *engine.prune_job(*id);
}

void expect_same_job(const PruneJobResult& tp, const PruneJobResult& one) {
    EXPECT_EQ(tp.state, PruneJobState::kCompleted) << tp.message;
    EXPECT_EQ(tp.state, one.state);
    EXPECT_EQ(tp.tokens_in_ranges, one.tokens_in_ranges);
    EXPECT_EQ(tp.kept, one.kept);
    EXPECT_EQ(tp.freed, one.freed);
    EXPECT_EQ(tp.blocks_freed, one.blocks_freed);
}

// Prefix-Cache Pruning: every rank scores with its heads, the max over ranks keeps what one rank
// keeps, every rank drops the same entries, and the pruned prefix still hits.
TEST_P(TensorParallelEngineTest, PruningACachedPrefixKeepsWhatOneRankKeeps) {
    const auto one = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), 1));
    const auto many = make_engine(tp_config(dir_, "dense", nlohmann::json::object(), GetParam()));
    const std::vector<int32_t> prompt = random_tokens(700, 200, 98);
    std::vector<std::vector<int32_t>> after;
    std::vector<PruneJobResult> jobs;
    for (Engine* e : {one.get(), many.get()}) {
        ASSERT_TRUE(run_to_end(*e, prompt, greedy(4)).ok());
        jobs.push_back(run_prune(*e, {.prefix = prompt, .ranges = {{32, 128}}, .keep_tokens = 24}));
        auto out = run_to_end(*e, prompt, greedy(8));
        ASSERT_TRUE(out.ok());
        after.push_back(out.value().token_ids);
    }
    expect_same_job(jobs[1], jobs[0]);
    EXPECT_GT(jobs[1].blocks_freed, 0);
    EXPECT_EQ(after[1], after[0]);
    EXPECT_EQ(many->prefix_cache_stats().num_hit_tokens, one->prefix_cache_stats().num_hit_tokens);
    EXPECT_EQ(many->cache_capacity().num_free_blocks, one->cache_capacity().num_free_blocks);
}

// Chain pruning (an eviction method's idle chain): the same, on the chain's retained state.
TEST_P(TensorParallelEngineTest, PruningAChainKeepsWhatOneRankKeeps) {
    const nlohmann::json knobs = {{"budget", 64}};
    const auto one = make_engine(tp_config(dir_, "snapkv", knobs, 1));
    const auto many = make_engine(tp_config(dir_, "snapkv", knobs, GetParam()));
    std::vector<int32_t> history = random_tokens(800, 120, 98);
    std::vector<std::vector<int32_t>> next_tokens;
    std::vector<PruneJobResult> jobs;
    const RequestOptions chain{.on_delta = {}, .cache_salt = "", .chain_id = "c"};
    for (Engine* e : {one.get(), many.get()}) {
        auto first = run_to_end(*e, history, greedy(4), chain);
        ASSERT_TRUE(first.ok());
        std::vector<int32_t> turn = history;
        turn.insert(turn.end(), first.value().token_ids.begin(), first.value().token_ids.end());
        jobs.push_back(run_prune(
            *e, {.prefix = turn, .chain_id = "c", .ranges = {{8, 100}}, .keep_tokens = 10}));
        const std::vector<int32_t> user = random_tokens(801, 20, 98);
        turn.insert(turn.end(), user.begin(), user.end());
        auto next = run_to_end(*e, turn, greedy(6), chain);
        ASSERT_TRUE(next.ok());
        next_tokens.push_back(next.value().token_ids);
    }
    expect_same_job(jobs[1], jobs[0]);
    EXPECT_GT(jobs[1].freed, 0);
    EXPECT_EQ(next_tokens[1], next_tokens[0]);
}

// A Chain Cache conversation of an eviction method: each turn resumes the compacted state on
// every rank and prefills only the new turn.
TEST_P(TensorParallelEngineTest, AChainConversationGivesTheSameTokensAsOneRank) {
    const nlohmann::json knobs = {{"budget", 48}};
    const auto one = make_engine(tp_config(dir_, "snapkv", knobs, 1));
    const auto many = make_engine(tp_config(dir_, "snapkv", knobs, GetParam()));
    std::vector<int32_t> history_one, history_many;
    uint64_t seed = 900;
    for (int turn = 0; turn < 3; ++turn) {
        const std::vector<int32_t> user = random_tokens(seed++, 30, 98);
        history_one.insert(history_one.end(), user.begin(), user.end());
        history_many.insert(history_many.end(), user.begin(), user.end());
        const RequestOptions chain{.on_delta = {}, .cache_salt = "", .chain_id = "c"};
        auto a = run_to_end(*one, history_one, greedy(6), chain);
        auto b = run_to_end(*many, history_many, greedy(6), chain);
        ASSERT_TRUE(a.ok() && b.ok());
        ASSERT_EQ(b.value().token_ids, a.value().token_ids) << "turn " << turn;
        EXPECT_EQ(b.value().usage.cached_tokens, a.value().usage.cached_tokens) << "turn " << turn;
        history_one.insert(history_one.end(), a.value().token_ids.begin(),
                           a.value().token_ids.end());
        history_many.insert(history_many.end(), b.value().token_ids.begin(),
                            b.value().token_ids.end());
    }
    EXPECT_GT(many->chain_stats().num_resumed, 0);
    // Every park compared the ranks' retained state by digest; none differed.
    EXPECT_EQ(many->chain_stats().num_invalidated, 0);
}

// Every sparse method, with a budget well under the context so it really selects or evicts.
TEST_P(TensorParallelEngineTest, EveryMethodGivesTheSameTokensAsOneRank) {
    for (const std::string& method : builtin_methods().ids()) {
        if (method == "dense") continue;
        SCOPED_TRACE(method);
        const nlohmann::json knobs = {{"budget", 40}};
        const auto one = make_engine(tp_config(dir_, method, knobs, 1));
        const auto many = make_engine(tp_config(dir_, method, knobs, GetParam()));
        const BatchRun a = run_batch(*one, prompts(), 12);
        const BatchRun b = run_batch(*many, prompts(), 12);
        EXPECT_EQ(b.tokens, a.tokens);
        // Where an entry holds every KV head, a rank's pool is the one rank's pool; methods with
        // a lane per KV head spread their lanes (and blocks) over the ranks.
        if (b.capacity.entries_per_token == a.capacity.entries_per_token) {
            EXPECT_EQ(b.capacity.num_free_blocks, a.capacity.num_free_blocks);
        } else {
            EXPECT_EQ(b.capacity.entries_per_token * GetParam(), a.capacity.entries_per_token);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TensorParallelEngineTest, ::testing::Values(2, 4));

TEST(TensorParallelConfigTest, ASizeThatDoesNotDivideTheHeadsIsRefusedNamingThem) {
    TempDir dir;
    write_dummy_llama(dir, tp_model());
    auto engine = Engine::create(tp_config(dir, "dense", nlohmann::json::object(), 3));
    ASSERT_FALSE(engine.ok());
    EXPECT_NE(engine.status().message().find("--tensor-parallel-size 3"), std::string::npos)
        << engine.status().to_string();
    EXPECT_NE(engine.status().message().find("attention heads"), std::string::npos);
}

}  // namespace
}  // namespace se::testing
