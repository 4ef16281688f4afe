// OmniKV: nothing is evicted; at decode, filter layers score the whole context with the step's
// query after their (full) attention, and the layers after each filter read only the chosen
// entries plus the sink and the recent window. Token-shared: one set per (sequence, filter
// layer), as PySE does; under tensor parallelism the token scores (a max over query heads) are
// reduced over the ranks, so every rank reads the same set. README.md gives the rule and the
// knobs.
#include <fmt/core.h>

#include <memory>
#include <vector>

#include "methods/omnikv/omnikv_layer_plan.h"
#include "methods/omnikv/omnikv_token_scores.h"
#include "sparse/full_cache_manager.h"
#include "sparse/key_scorer.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"
#include "sparse/rank_reduce.h"
#include "sparse/ranking.h"

namespace se {
namespace {

struct OmniKvKnobs {
    int32_t budget = 1024;  // sink + keep + recent: entries a target layer reads
    int32_t sink = 4;
    int32_t recent = 16;  // the newest entries, the decode token included
};

class OmniKvRuntime final : public MethodRuntime {
  public:
    OmniKvRuntime(OmniKvKnobs knobs, OmniKvLayerPlan layers, FullCacheManager& cache,
                  Communicator* comm)
        : knobs_(knobs), layers_(std::move(layers)), cache_(cache), comm_(comm) {}

    void prepare_step(const StepPlan&) override { picks_.clear(); }

    bool needs_attention_stats(int32_t layer, StepPhase phase) const override {
        return phase == StepPhase::kDecode && layers_.feeds_targets(layer);
    }

    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }

    Selection select_decode(int32_t layer, const ConstTensorView&) override {
        const OmniKvLayer& l = layers_.layers[layer];
        if (l.role != OmniKvRole::kTarget) return Selection::full();
        SE_CHECK(!picks_.empty() && picks_from_ == l.filter,
                 "layer %d reads the set of filter layer %d, which has not chosen it", layer,
                 l.filter);
        return Selection::entries(picks_);
    }

    void on_attention_end(int32_t layer, const AttentionStats& stats) override {
        picks_.clear();
        for (const PagedSeq& seq : cache_.step_seqs()) picks_.push_back(choose(layer, stats, seq));
        picks_from_ = layer;
    }

  private:
    // The set for one sequence of L entries (the decode token is entry L - 1):
    //
    //   [0, S) sink | [S, L - R) candidates: top `keep` by candidate_scores | [L - R, L) recent
    //
    // plus entry L - 1 (in the recent window unless R = 0).
    SeqPick choose(int32_t layer, const AttentionStats& stats, const PagedSeq& seq) {
        const int32_t len = seq.kv_len;
        if (len <= knobs_.budget) return SeqPick::every();
        const int32_t keep = knobs_.budget - knobs_.sink - knobs_.recent;
        const int32_t end = len - knobs_.recent;  // > sink + keep since len > budget
        const KeyScorer scorer(cache_.kv().layer_cache(layer), seq.block_table, len, stats.args);
        logits_.resize(static_cast<size_t>(stats.args.num_heads) * len);
        scorer.score(stats.q.f32() + int64_t{seq.q_start} * stats.q.cols, len, ScoreMode::kLogits,
                     logits_);
        candidate_scores(logits_, stats.args.num_heads, len, knobs_.sink, end, scores_);
        // The max over this rank's heads, then over every rank's (exact).
        max_over_ranks(comm_, scores_);
        std::vector<int32_t> ids;
        for (int32_t j = 0; j < knobs_.sink; ++j) ids.push_back(j);
        for (const int32_t j : top_k(scores_, keep)) ids.push_back(knobs_.sink + j);
        for (int32_t j = end; j < len; ++j) ids.push_back(j);
        if (ids.back() != len - 1) ids.push_back(len - 1);
        return SeqPick::only(std::move(ids));
    }

    OmniKvKnobs knobs_;
    OmniKvLayerPlan layers_;
    FullCacheManager& cache_;
    Communicator* comm_ = nullptr;  // the tensor-parallel group (null: one rank)
    std::vector<SeqPick> picks_;    // the step's set per sequence (plan order), from picks_from_
    int32_t picks_from_ = 0;
    std::vector<float> logits_;  // f32 [num_heads, L]
    std::vector<float> scores_;  // f32 [L - R - S]
};

Expected<OmniKvLayerPlan> parse_layers(const Knobs& knobs, int32_t num_layers) {
    SE_ASSIGN_OR_RETURN(
        std::vector<int32_t> filters,
        knobs.integers("filter_layers", default_filter_layers(num_layers), 0, num_layers - 1));
    for (size_t i = 1; i < filters.size(); ++i) {
        if (filters[i] <= filters[i - 1]) {
            return knobs.error("filter_layers", "must be ascending without repeats");
        }
    }
    SE_ASSIGN_OR_RETURN(int32_t wait, knobs.integer("num_wait_load_layers", 0, 0, num_layers));
    OmniKvLayerPlan plan = plan_layers(num_layers, filters, wait);
    if (plan.num_targets() == 0) {
        return knobs.error(
            "filter_layers",
            fmt::format("leaves no layer to sparsify ({} layers, filters {}, {} wait layers)",
                        num_layers, nlohmann::json(filters).dump(), wait));
    }
    return plan;
}

Expected<Method> create_omnikv(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(Knobs knobs, Knobs::parse("omnikv", context.knobs,
                                                  {"budget", "sink", "recent", "filter_layers",
                                                   "num_wait_load_layers"}));
    OmniKvKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_ASSIGN_OR_RETURN(k.sink, knobs.integer("sink", k.sink, 0));
    SE_ASSIGN_OR_RETURN(k.recent, knobs.integer("recent", k.recent, 0));
    if (int64_t{k.budget} <= int64_t{k.sink} + k.recent) {
        return knobs.error("budget", fmt::format("({}) must exceed sink ({}) + recent ({}): no "
                                                 "entry would be chosen",
                                                 k.budget, k.sink, k.recent));
    }
    SE_ASSIGN_OR_RETURN(OmniKvLayerPlan layers, parse_layers(knobs, context.model.num_layers));
    SE_ASSIGN_OR_RETURN(PagedKvStore store, make_full_kv_store(context));
    auto cache = std::make_unique<FullCacheManager>(
        context.ops, std::move(store),
        FullCacheOptions{.enable_prefix_caching = context.enable_prefix_caching});
    auto runtime = std::make_unique<OmniKvRuntime>(k, std::move(layers), *cache, context.comm);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"omnikv", &create_omnikv};

}  // namespace
}  // namespace se
