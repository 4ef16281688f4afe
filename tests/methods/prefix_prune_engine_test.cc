// Prefix-Cache Pruning through the engine (dense method): a job frees exactly what its ranges
// hold beyond the keep budget and returns those blocks to the pool; the next request with the
// same prefix still hits and computes what attention over the kept entries alone computes (an
// independent naive reference); snapkv_global keeps exactly what a naive scorer keeps; a prefix
// a running request reads blocks the job and changes nothing. Also inspect, delete and priority.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/cpu/cpu_ops.h"
#include "model/decoder_model.h"
#include "model/model_loader.h"
#include "support/methods/engine_runs.h"
#include "support/methods/method_harness.h"
#include "support/methods/naive_attention.h"

namespace se::testing {
namespace {

constexpr int32_t kVocab = 96;    // the harness model's
constexpr int32_t kChunk = 64;    // the engine's prefill chunk
constexpr int32_t kPrompt = 200;  // the first request: 12 whole blocks (192 tokens) are cached
constexpr int32_t kCached = 192;
constexpr int32_t kOutput = 5;

// The harness model run with NaiveAttention: no paged store, no kernels of the engine.
class NaiveModel {
  public:
    explicit NaiveModel(const TempDir& dir) {
        auto loaded = load_model(
            {.model = dir.path().string(), .load_format = "dummy", .dtype = "float32", .seed = 1});
        SE_CHECK(loaded.ok(), "%s", loaded.status().to_string().c_str());
        loaded_ = std::move(loaded).value();
        auto model = DecoderModel::create(loaded_.config, loaded_.weights, ops_);
        SE_CHECK(model.ok(), "%s", model.status().to_string().c_str());
        model_ = std::move(model).value();
    }
    const ModelConfig& config() const { return loaded_.config; }

    // Runs tokens at positions first, first + 1, ...; returns the greedy token after the last.
    int32_t forward(NaiveAttention& attention, std::span<const int32_t> tokens, int32_t first) {
        std::vector<int32_t> positions(tokens.size());
        std::iota(positions.begin(), positions.end(), first);
        attention.begin(positions);
        const int32_t vocab = loaded_.config.vocab_size;
        std::vector<float> logits(static_cast<size_t>(vocab));
        const std::vector<int32_t> rows = {static_cast<int32_t>(tokens.size()) - 1};
        model_->forward({.token_ids = tokens, .positions = positions, .logit_rows = rows},
                        attention, TensorView{DType::kF32, logits.data(), 1, vocab});
        return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) -
                                    logits.begin());
    }

    // Greedy continuation of `prompt` after computing its first `cached` tokens, dropping the
    // KV of `dropped` and computing the rest over what is left (what a pruned prefix gives).
    std::vector<int32_t> continue_after_drop(const std::vector<int32_t>& prompt, int32_t cached,
                                             const std::vector<int32_t>& dropped,
                                             int32_t num_tokens) {
        NaiveAttention attention(config());
        const std::span<const int32_t> all(prompt);
        forward(attention, all.first(static_cast<size_t>(cached)), 0);
        attention.erase(dropped);
        std::vector<int32_t> out = {forward(attention, all.subspan(cached), cached)};
        for (int32_t i = 1; i < num_tokens; ++i) {
            const int32_t position = static_cast<int32_t>(prompt.size()) + i - 1;
            out.push_back(forward(attention, std::span(&out.back(), 1), position));
        }
        return out;
    }

    // snapkv_global by its definition: the window rows' softmax over [0, position], mean over
    // the rows, max over heads and layers; the best `keep` candidates, ties to the lower.
    std::vector<int32_t> snapkv_keep(std::span<const int32_t> prefix, int32_t window_start,
                                     const std::vector<int32_t>& candidates, int32_t keep) {
        const ModelConfig& c = config();
        NaiveAttention attention(c);
        std::vector<std::vector<std::vector<float>>> window(static_cast<size_t>(c.num_layers));
        attention.on_query([&](int32_t layer, int32_t row, const float* q) {
            if (row >= window_start) window[layer].emplace_back(q, q + c.num_heads * c.head_dim);
        });
        forward(attention, prefix, 0);
        std::vector<double> score(candidates.size(), 0.0);
        for (int32_t layer = 0; layer < c.num_layers; ++layer) {
            const auto& rows = window[layer];
            for (int32_t h = 0; h < c.num_heads; ++h) {
                std::vector<double> mean(candidates.size(), 0.0);
                for (size_t i = 0; i < rows.size(); ++i) {
                    const auto p =
                        attention.probabilities(layer, rows[i].data() + h * c.head_dim, h,
                                                window_start + static_cast<int32_t>(i));
                    for (size_t k = 0; k < candidates.size(); ++k) {
                        mean[k] += p[candidates[k]] / static_cast<double>(rows.size());
                    }
                }
                for (size_t k = 0; k < candidates.size(); ++k) {
                    score[k] = std::max(score[k], mean[k]);
                }
            }
        }
        std::vector<size_t> order(candidates.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return score[a] > score[b]; });
        std::vector<int32_t> kept;
        for (int32_t i = 0; i < keep; ++i) kept.push_back(candidates[order[i]]);
        std::sort(kept.begin(), kept.end());
        return kept;
    }

  private:
    LoadedModel loaded_;
    CpuOps ops_{CpuOptions{.num_threads = 1}};
    std::unique_ptr<DecoderModel> model_;
};

std::vector<int32_t> positions_in(const std::vector<TokenRange>& ranges) {
    std::vector<int32_t> out;
    for (const TokenRange& r : ranges) {
        for (int32_t p = r.begin; p < r.end; ++p) out.push_back(p);
    }
    return out;
}

std::vector<int32_t> minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    std::vector<int32_t> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

class PrefixPruneTest : public ::testing::Test {
  protected:
    PrefixPruneTest() : naive_((write_dummy_llama(dir_), dir_)) {
        engine_ =
            make_engine(harness_engine_config(dir_, "dense", nlohmann::json::object(), kChunk));
        prompt_ = random_tokens(7, kPrompt, kVocab);
        must_run(prompt_, 1);
    }

    RequestOutput must_run(std::vector<int32_t> prompt, int32_t max_tokens) {
        auto out = run_to_end(*engine_, std::move(prompt), greedy(max_tokens));
        SE_CHECK(out.ok(), "%s", out.status().to_string().c_str());
        return std::move(out).value();
    }

    // Submits a job over the cached prompt and runs it (it runs at the start of a step).
    PruneJobResult prune(PruneJobRequest request) {
        if (request.prefix.empty()) request.prefix = prompt_;
        auto id = engine_->submit_prune(std::move(request));
        SE_CHECK(id.ok(), "%s", id.status().to_string().c_str());
        EXPECT_EQ(engine_->prune_job(*id)->state, PruneJobState::kQueued);
        EXPECT_TRUE(engine_->has_work());
        engine_->step();
        return *engine_->prune_job(*id);
    }

    // The positions of the ranges the prefix still holds.
    std::vector<int32_t> resident_in(const std::vector<TokenRange>& ranges) {
        auto seen = engine_->inspect_prefix(prompt_);
        SE_CHECK(seen.ok(), "%s", seen.status().to_string().c_str());
        return minus(positions_in(ranges), positions_in(seen->pruned));
    }

    // The next turn hits the whole cached prefix and continues exactly as attention over the
    // kept entries does.
    void expect_next_turn_reads_kept_entries(const std::vector<int32_t>& dropped) {
        std::vector<int32_t> next = prompt_;
        const std::vector<int32_t> user = random_tokens(8, 20, kVocab);
        next.insert(next.end(), user.begin(), user.end());
        const RequestOutput out = must_run(next, kOutput);
        EXPECT_EQ(out.usage.cached_tokens, kCached);
        EXPECT_EQ(out.token_ids, naive_.continue_after_drop(next, kCached, dropped, kOutput));
    }

    TempDir dir_;
    NaiveModel naive_;
    std::unique_ptr<Engine> engine_;
    std::vector<int32_t> prompt_;
};

TEST_F(PrefixPruneTest, FreesWidthMinusKeepKeepsWhatTheNaiveScorerKeepsAndStillHits) {
    const CacheCapacity before = engine_->cache_capacity();
    const PruneJobResult r = prune({.ranges = {{.begin = 30, .end = 130}},
                                    .keep_tokens = 40,
                                    .policy = PrunePolicy::kObservationWindow,
                                    .observation_tokens = 64});
    ASSERT_EQ(r.state, PruneJobState::kCompleted) << r.message;
    EXPECT_EQ(r.ranges, (std::vector<TokenRange>{{32, 128}}));
    EXPECT_TRUE(r.shrunk);
    EXPECT_EQ(r.tokens_in_ranges, 96);
    EXPECT_EQ(r.kept, 40);
    EXPECT_EQ(r.freed, 56);
    // 40 kept entries fill 3 of the range's 6 blocks.
    EXPECT_EQ(r.blocks_freed, 3);
    EXPECT_EQ(engine_->cache_capacity().num_free_blocks, before.num_free_blocks + 3);

    const auto seen = engine_->inspect_prefix(prompt_);
    ASSERT_TRUE(seen.ok());
    EXPECT_EQ(seen->matched_tokens, kCached);
    EXPECT_EQ(seen->num_resident_entries, kCached - 56);
    EXPECT_TRUE(seen->quality_degraded);

    // The window is the prefix's last 64 tokens, [128, 192).
    const std::vector<int32_t> candidates = positions_in(r.ranges);
    const std::vector<int32_t> kept = resident_in(r.ranges);
    EXPECT_EQ(kept, naive_.snapkv_keep(std::span(prompt_).first(kCached), 128, candidates, 40));
    expect_next_turn_reads_kept_entries(minus(candidates, kept));
}

TEST_F(PrefixPruneTest, KeepZeroEmptiesTheRanges) {
    const CacheCapacity before = engine_->cache_capacity();
    const std::vector<TokenRange> ranges = {{16, 80}, {96, 144}};
    const PruneJobResult r = prune({.ranges = ranges, .keep_tokens = 0});
    ASSERT_EQ(r.state, PruneJobState::kCompleted) << r.message;
    EXPECT_FALSE(r.shrunk);
    EXPECT_EQ(r.freed, 112);
    EXPECT_EQ(r.blocks_freed, 7);
    EXPECT_EQ(engine_->cache_capacity().num_free_blocks, before.num_free_blocks + 7);
    const auto seen = engine_->inspect_prefix(prompt_);
    ASSERT_TRUE(seen.ok());
    EXPECT_EQ(seen->pruned, ranges);
    EXPECT_EQ(seen->num_resident_entries, kCached - 112);
    EXPECT_EQ(engine_->metrics().prune_freed_tokens.value(), 112);
    EXPECT_NE(engine_->render_metrics().find("prune_jobs_total{model_name=\""), std::string::npos);
    EXPECT_NE(engine_->render_metrics().find("state=\"completed\"} 1\n"), std::string::npos);
    expect_next_turn_reads_kept_entries(positions_in(ranges));
}

TEST_F(PrefixPruneTest, KvzipGlobalFreesItsShareAndTheNextTurnReadsWhatIsLeft) {
    const CacheCapacity before = engine_->cache_capacity();
    const PruneJobResult r = prune({.ranges = {{32, 128}},
                                    .keep_ratio = 0.25,
                                    .policy = PrunePolicy::kReconstruction,
                                    .score_chunk_size = 40});
    ASSERT_EQ(r.state, PruneJobState::kCompleted) << r.message;
    EXPECT_EQ(r.kept, 24);
    EXPECT_EQ(r.freed, 72);
    EXPECT_EQ(r.blocks_freed, 4);
    EXPECT_EQ(engine_->cache_capacity().num_free_blocks, before.num_free_blocks + 4);
    const std::vector<int32_t> kept = resident_in(r.ranges);
    EXPECT_EQ(kept.size(), 24u);
    expect_next_turn_reads_kept_entries(minus(positions_in(r.ranges), kept));
}

TEST_F(PrefixPruneTest, ABlockARunningRequestReadsBlocksTheJobAndChangesNothing) {
    std::vector<int32_t> next = prompt_;
    next.push_back(5);
    auto id = engine_->add_request(next, greedy(30));
    ASSERT_TRUE(id.ok());
    engine_->step();  // admitted on the cached prefix: it reads every block of it now
    auto job = engine_->submit_prune({.prefix = prompt_, .ranges = {{32, 96}}, .keep_tokens = 0});
    ASSERT_TRUE(job.ok());
    engine_->step();
    const PruneJobResult r = *engine_->prune_job(*job);
    EXPECT_EQ(r.state, PruneJobState::kBlocked);
    EXPECT_NE(r.message.find("blocked"), std::string::npos) << r.message;
    EXPECT_EQ(r.freed, 0);
    auto seen = engine_->inspect_prefix(prompt_);
    ASSERT_TRUE(seen.ok());
    EXPECT_FALSE(seen->quality_degraded);
    EXPECT_EQ(seen->num_resident_entries, kCached);
    while (engine_->has_work()) engine_->step();
    EXPECT_EQ(engine_->take_finished().size(), 1u);
    // Once the request finished, the same job goes through.
    EXPECT_EQ(prune({.ranges = {{32, 96}}, .keep_tokens = 0}).state, PruneJobState::kCompleted);
}

TEST_F(PrefixPruneTest, RefusalsAndFailuresNameTheirCause) {
    auto both = engine_->submit_prune(
        {.prefix = prompt_, .ranges = {{0, 32}}, .keep_tokens = 1, .keep_ratio = 0.5});
    EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
    auto outside =
        engine_->submit_prune({.prefix = prompt_, .ranges = {{0, 900}}, .keep_tokens = 1});
    EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);

    const PruneJobResult unknown =
        prune({.prefix = random_tokens(9, 64, kVocab), .ranges = {{0, 32}}, .keep_tokens = 0});
    EXPECT_EQ(unknown.state, PruneJobState::kFailed);
    EXPECT_NE(unknown.message.find("prefix cache holds"), std::string::npos) << unknown.message;

    const PruneJobResult no_window = prune({.ranges = {{160, 192}}, .keep_tokens = 0});
    EXPECT_EQ(no_window.state, PruneJobState::kFailed);
    EXPECT_NE(no_window.message.find("no observation window"), std::string::npos);

    // Pruning a range twice: the second job finds nothing left to score.
    ASSERT_EQ(prune({.ranges = {{32, 64}}, .keep_tokens = 8}).state, PruneJobState::kCompleted);
    const PruneJobResult again = prune({.ranges = {{32, 80}}, .keep_tokens = 0});
    ASSERT_EQ(again.state, PruneJobState::kCompleted) << again.message;
    EXPECT_EQ(again.already_pruned, 32);
    EXPECT_EQ(again.tokens_in_ranges, 16);
    EXPECT_EQ(again.freed, 16);

    TempDir dir;
    write_dummy_llama(dir);
    auto snapkv = make_engine(harness_engine_config(dir, "snapkv", {{"budget", 64}}, kChunk));
    auto refused = snapkv->submit_prune({.prefix = prompt_, .ranges = {{0, 32}}, .keep_tokens = 0});
    EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find("snapkv"), std::string::npos);
    EXPECT_EQ(snapkv->inspect_prefix(prompt_).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(PrefixPruneTest, InspectDeleteAndPriority) {
    const std::span<const int32_t> prompt(prompt_);
    EXPECT_EQ(engine_->inspect_prefix(prompt_)->matched_tokens, kCached);
    EXPECT_EQ(engine_->inspect_prefix(prompt_, "other salt")->matched_tokens, 0);

    // Pinned nodes survive a flush; normal ones do not.
    const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 64);
    EXPECT_EQ(engine_->set_prefix_priority(head, "", EvictionPriority::kPinned).value(), 4);
    engine_->flush_prefix_cache();
    auto seen = engine_->inspect_prefix(prompt_);
    EXPECT_EQ(seen->matched_tokens, 64);
    EXPECT_EQ(seen->num_pinned, 4);

    // Deleting the subtree under [0, 32) removes blocks 1..3, pinned or not.
    const std::vector<int32_t> first_two(prompt.begin(), prompt.begin() + 32);
    EXPECT_EQ(engine_->delete_prefix_subtree(first_two).value(), 3);
    EXPECT_EQ(engine_->inspect_prefix(prompt_)->matched_tokens, 16);
    EXPECT_EQ(engine_->delete_prefix_subtree(prompt_).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(
        engine_->set_prefix_priority(prompt_, "", EvictionPriority::kPreferEvict).status().code(),
        StatusCode::kNotFound);
}

}  // namespace
}  // namespace se::testing
