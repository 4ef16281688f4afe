// Pruning an idle Chain Cache chain (methods that evict): the job drops, in every layer, the
// entries of the ranges it does not keep, frees their blocks, and the next turn resumes on what
// is left, computing exactly what the method computes after the same drop (the reference drives
// the method directly). A busy chain blocks the job; wrong history, unknown chains and per-head
// methods fail with their cause.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "support/methods/engine_runs.h"
#include "support/methods/method_harness.h"

namespace se::testing {
namespace {

constexpr int32_t kVocab = 96;
constexpr int32_t kChunk = 64;
constexpr int32_t kOutput = 6;

const nlohmann::json kSnapKv = {{"budget", 160}};

// Resident token positions of `seq` per layer.
std::vector<std::set<int32_t>> resident(const CacheManager& cache, SeqId seq, int32_t layers) {
    std::vector<std::set<int32_t>> out(static_cast<size_t>(layers));
    for (int32_t layer = 0; layer < layers; ++layer) {
        ResidentKeys keys;
        SE_CHECK(cache.resident_keys(seq, layer, keys));
        out[layer].insert(keys.positions.begin(), keys.positions.end());
    }
    return out;
}

class ChainPruneTest : public ::testing::Test {
  protected:
    ChainPruneTest() {
        write_dummy_llama(dir_);
        engine_ = make_engine(harness_engine_config(dir_, "snapkv", kSnapKv, kChunk));
        prompt_ = random_tokens(3, 300, kVocab);
        auto out = run_to_end(*engine_, prompt_, greedy(kOutput), {.chain_id = "c"});
        SE_CHECK(out.ok(), "%s", out.status().to_string().c_str());
        first_ = std::move(out).value();
        history_ = prompt_;
        history_.insert(history_.end(), first_.token_ids.begin(), first_.token_ids.end());
    }

    int32_t layers() const { return engine_->model_config().num_layers; }

    PruneJobResult prune(PruneJobRequest request) {
        auto id = engine_->submit_prune(std::move(request));
        SE_CHECK(id.ok(), "%s", id.status().to_string().c_str());
        engine_->step();
        return *engine_->prune_job(*id);
    }

    TempDir dir_;
    std::unique_ptr<Engine> engine_;
    std::vector<int32_t> prompt_;
    std::vector<int32_t> history_;  // prompt + reply: the chain processed all but the last token
    RequestOutput first_;
};

TEST_F(ChainPruneTest, DropsTheUnkeptEntriesEverywhereAndTheNextTurnResumesOnWhatIsLeft) {
    const SeqId owner = first_.id;
    const auto before = resident(engine_->cache_manager(), owner, layers());
    std::set<int32_t> in_ranges;
    for (const auto& layer : before) {
        for (int32_t p : layer) {
            if (p >= 20 && p < 200) in_ranges.insert(p);
        }
    }
    const CacheCapacity cap = engine_->cache_capacity();
    const PruneJobResult r = prune({.prefix = history_,
                                    .chain_id = "c",
                                    .ranges = {{20, 200}},
                                    .keep_ratio = 0.2,
                                    .policy = PrunePolicy::kObservationWindow,
                                    .observation_tokens = 32});
    ASSERT_EQ(r.state, PruneJobState::kCompleted) << r.message;
    EXPECT_EQ(r.tokens_in_ranges, static_cast<int32_t>(in_ranges.size()));
    EXPECT_EQ(r.already_pruned, 180 - r.tokens_in_ranges);  // SnapKV evicted those itself
    EXPECT_EQ(r.kept, static_cast<int32_t>(in_ranges.size()) / 5);
    EXPECT_EQ(r.freed, r.tokens_in_ranges - r.kept);
    EXPECT_EQ(engine_->cache_capacity().num_free_blocks, cap.num_free_blocks + r.blocks_freed);
    EXPECT_GT(r.blocks_freed, 0);
    EXPECT_EQ(engine_->chain_stats().idle_blocks,
              cap.num_blocks - engine_->cache_capacity().num_free_blocks);

    // Exactly `kept` positions of the ranges survive anywhere; outside them nothing changed.
    const auto after = resident(engine_->cache_manager(), owner, layers());
    std::set<int32_t> kept;
    std::vector<int32_t> dropped;
    for (int32_t layer = 0; layer < layers(); ++layer) {
        for (int32_t p : before[layer]) {
            const bool ranged = p >= 20 && p < 200;
            if (!ranged) EXPECT_EQ(after[layer].count(p), 1u) << p;
            if (ranged && after[layer].count(p) != 0) kept.insert(p);
        }
    }
    EXPECT_EQ(static_cast<int32_t>(kept.size()), r.kept);
    std::set_difference(in_ranges.begin(), in_ranges.end(), kept.begin(), kept.end(),
                        std::back_inserter(dropped));

    // The next turn resumes the pruned state.
    std::vector<int32_t> next = history_;
    const std::vector<int32_t> user = random_tokens(4, 30, kVocab);
    next.insert(next.end(), user.begin(), user.end());
    auto out = run_to_end(*engine_, next, greedy(kOutput), {.chain_id = "c"});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(out->chain->status, ChainStatus::kResumed);

    auto reference = MethodHarness::create("snapkv", kSnapKv, {.max_step_tokens = kChunk});
    ASSERT_TRUE(reference.ok());
    (*reference)->extend(1, prompt_, 0, kChunk, kOutput - 1);
    (*reference)->method().cache->drop_positions(1, dropped);
    const auto processed = static_cast<int32_t>(history_.size()) - 1;
    EXPECT_EQ(out->token_ids, (*reference)->extend(1, next, processed, kChunk, kOutput - 1));
}

TEST_F(ChainPruneTest, ABusyChainBlocksTheJob) {
    std::vector<int32_t> next = history_;
    next.push_back(7);
    ASSERT_TRUE(engine_->add_request(next, greedy(20), {.chain_id = "c"}).ok());
    const PruneJobResult r =
        prune({.prefix = history_, .chain_id = "c", .ranges = {{0, 100}}, .keep_tokens = 0});
    EXPECT_EQ(r.state, PruneJobState::kBlocked);
    EXPECT_NE(r.message.find("busy"), std::string::npos) << r.message;
    EXPECT_EQ(r.freed, 0);
    // The request resumes the whole state: it reuses every token the chain processed.
    while (engine_->has_work()) engine_->step();
    const std::vector<RequestOutput> done = engine_->take_finished();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].usage.reused_tokens, static_cast<int32_t>(history_.size()) - 1);
}

TEST_F(ChainPruneTest, FailuresNameTheirCause) {
    std::vector<int32_t> wrong = history_;
    wrong[3] = (wrong[3] + 1) % kVocab;
    const PruneJobResult mismatch =
        prune({.prefix = wrong, .chain_id = "c", .ranges = {{0, 100}}, .keep_tokens = 0});
    EXPECT_EQ(mismatch.state, PruneJobState::kFailed);
    EXPECT_NE(mismatch.message.find("do not begin"), std::string::npos) << mismatch.message;
    const PruneJobResult unknown =
        prune({.prefix = history_, .chain_id = "nope", .ranges = {{0, 100}}, .keep_tokens = 0});
    EXPECT_EQ(unknown.state, PruneJobState::kFailed);
    EXPECT_NE(unknown.message.find("no chain"), std::string::npos) << unknown.message;

    TempDir dir;
    write_dummy_llama(dir);
    auto dense = make_engine(harness_engine_config(dir, "dense", nlohmann::json::object(), kChunk));
    auto refused = dense->submit_prune(
        {.prefix = history_, .chain_id = "c", .ranges = {{0, 16}}, .keep_tokens = 0});
    EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);

    auto adakv = make_engine(harness_engine_config(dir, "adakv", {{"budget", 160}}, kChunk));
    auto ada = run_to_end(*adakv, prompt_, greedy(kOutput), {.chain_id = "a"});
    ASSERT_TRUE(ada.ok());
    std::vector<int32_t> ada_history = prompt_;
    ada_history.insert(ada_history.end(), ada->token_ids.begin(), ada->token_ids.end());
    auto id = adakv->submit_prune(
        {.prefix = ada_history, .chain_id = "a", .ranges = {{0, 100}}, .keep_tokens = 0});
    ASSERT_TRUE(id.ok());
    adakv->step();
    const PruneJobResult per_head = *adakv->prune_job(*id);
    EXPECT_EQ(per_head.state, PruneJobState::kFailed);
    EXPECT_NE(per_head.message.find("per KV head"), std::string::npos) << per_head.message;
}

}  // namespace
}  // namespace se::testing
