// Ada-SnapKV: at the end of each prompt, SnapKV's observation window scores every KV head's
// prompt entries, the layer's budget is split across the heads by a global top-k with a per-head
// floor, and each head keeps its share plus the window. Per KV head: one lane per (layer, KV
// head), whose compaction is the head's selection; decode appends to every head and evicts
// nothing. Under tensor parallelism the split runs over every rank's heads (their scores gathered)
// and each rank compacts its own heads. README.md gives the rule and the knobs.
#include <fmt/core.h>

#include <memory>
#include <unordered_map>
#include <utility>

#include "methods/adakv/head_budgets.h"
#include "methods/adakv/head_scores.h"
#include "sparse/evicting_cache_manager.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"
#include "sparse/ranking.h"
#include "sparse/window_scores.h"

namespace se {
namespace {

struct AdaKnobs {
    int32_t budget = 1024;  // entries each KV head keeps on average, window included
    int32_t window = 32;    // observation window: the prompt's last queries
    int32_t kernel = 7;     // max-pool width
    double alpha = 0.2;     // share of the per-head budget every head is guaranteed
};

class AdaRuntime final : public MethodRuntime {
  public:
    AdaRuntime(AdaKnobs knobs, EvictingCacheManager& cache, const MethodContext& context)
        : knobs_(knobs),
          cache_(cache),
          num_kv_heads_(context.model.num_kv_heads),
          num_layers_(context.model.num_layers),
          width_(context.model.num_heads * context.model.head_dim),
          comm_(context.comm) {}

    void prepare_step(const StepPlan& plan) override {
        plan_ = plan;
        std::erase_if(windows_,
                      [&](const auto& entry) { return !cache_.kv().contains(entry.first); });
        // A sequence starting over (an earlier run of the same id) starts an empty window.
        for (const StepSeq& s : plan_.seqs) {
            if (s.num_computed_tokens == 0) windows_.erase(s.seq_id);
        }
    }
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
    bool needs_attention_stats(int32_t, StepPhase phase) const override {
        return phase == StepPhase::kPrefill;
    }

    // Keeps the window's queries; at a prompt's last chunk the layer's keys are all stored, so
    // its heads are scored and their compactions wait for finish_step.
    void on_attention_end(int32_t layer, const AttentionStats& stats) override {
        int64_t q_start = 0;
        for (const StepSeq& s : stats.plan.seqs) {
            window_of(s.seq_id, layer)
                .push(stats.q.f32() + q_start * stats.q.cols, s.num_new_tokens,
                      s.num_computed_tokens);
            if (s.samples) {
                compress(s.seq_id, layer, s.num_computed_tokens + s.num_new_tokens, stats);
            }
            q_start += s.num_new_tokens;
        }
    }

    EvictionPlan finish_step() override {
        for (const StepSeq& s : plan_.seqs) {
            if (plan_.phase == StepPhase::kPrefill && s.samples) windows_.erase(s.seq_id);
        }
        return std::exchange(pending_, {});
    }

  private:
    void compress(SeqId seq, int32_t layer, int32_t len, const AttentionStats& stats) {
        if (len <= knobs_.budget) return;
        const int32_t w = knobs_.window;
        const int32_t group = stats.args.num_heads / stats.args.num_kv_heads;
        const AttentionArgs head_args{.num_heads = group,
                                      .num_kv_heads = 1,
                                      .head_dim = stats.args.head_dim,
                                      .scale = stats.args.scale};
        const QueryWindow& window = window_of(seq, layer);
        SE_CHECK(window.size() == w, "%d window rows of %d", window.size(), w);
        const float* q = window.row(0);  // f32 [w, num_heads * head_dim]
        std::vector<std::vector<float>> scores;
        for (int32_t g = 0; g < num_kv_heads_; ++g) {
            const int32_t lane = cache_.lane(layer, g);
            SE_CHECK(cache_.kv().num_entries(seq, lane) == len, "head lane holds %d of %d entries",
                     cache_.kv().num_entries(seq, lane), len);
            scores.push_back(
                adakv::window_head_scores({.cache = &cache_.kv().cache(),
                                           .block_table = cache_.kv().block_table(seq, lane),
                                           .num_entries = len,
                                           .window = w,
                                           .q = q + int64_t{g} * group * head_args.head_dim,
                                           .q_stride = stats.q.cols},
                                          head_args, knobs_.kernel));
        }
        const std::vector<int32_t> caps =
            adakv::rank_head_caps(scores, knobs_.budget - w, knobs_.alpha, comm_);
        for (int32_t g = 0; g < num_kv_heads_; ++g) {
            Compaction c{
                .seq = seq, .lane = cache_.lane(layer, g), .keep = top_k(scores[g], caps[g])};
            for (int32_t j = len - w; j < len; ++j) c.keep.push_back(j);
            pending_.compactions.push_back(std::move(c));
        }
    }

    // The last `window` prompt query rows of (seq, layer), kept across chunks so that the
    // observation window may span chunk boundaries.
    QueryWindow& window_of(SeqId seq, int32_t layer) {
        auto [it, inserted] = windows_.try_emplace(seq);
        if (inserted) {
            it->second.assign(static_cast<size_t>(num_layers_), QueryWindow(knobs_.window, width_));
        }
        return it->second.at(layer);
    }

    AdaKnobs knobs_;
    EvictingCacheManager& cache_;
    int32_t num_kv_heads_ = 0;
    int32_t num_layers_ = 0;
    int32_t width_ = 0;             // num_heads * head_dim, one query row
    Communicator* comm_ = nullptr;  // the tensor-parallel group (null: one rank)
    std::unordered_map<SeqId, std::vector<QueryWindow>> windows_;  // [seq][layer]
    StepPlan plan_;
    EvictionPlan pending_;
};

Expected<AdaKnobs> parse_knobs(const nlohmann::json& json) {
    SE_ASSIGN_OR_RETURN(Knobs knobs,
                        Knobs::parse("adakv", json, {"budget", "window", "kernel", "alpha"}));
    AdaKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_ASSIGN_OR_RETURN(k.window, knobs.integer("window", k.window, 1));
    SE_ASSIGN_OR_RETURN(k.kernel, knobs.integer("kernel", k.kernel, 1, 1023));
    SE_ASSIGN_OR_RETURN(k.alpha, knobs.number("alpha", k.alpha, 0.0, 1.0));
    if (k.kernel % 2 == 0) return knobs.error("kernel", fmt::format("({}) must be odd", k.kernel));
    if (k.budget <= k.window) {
        return knobs.error("budget", fmt::format("({}) must exceed window ({}): no entry outside "
                                                 "the window could be kept",
                                                 k.budget, k.window));
    }
    return k;
}

Expected<Method> create_adakv(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(AdaKnobs k, parse_knobs(context.knobs));
    const int32_t num_layers = context.model.num_layers;
    // Heads keep unequal shares and decode grows them, so the oracle counts every token
    // (bounded_decode off): a sequence never holds more than its tokens on any head.
    SE_ASSIGN_OR_RETURN(
        std::unique_ptr<EvictingCacheManager> cache,
        EvictingCacheManager::create(context, {.per_kv_head = true,
                                               .layer_budgets = std::vector<int32_t>(
                                                   static_cast<size_t>(num_layers), k.budget),
                                               .bounded_decode = false,
                                               .max_step_tokens = context.max_step_tokens}));
    auto runtime = std::make_unique<AdaRuntime>(k, *cache, context);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"adakv", &create_adakv};

}  // namespace
}  // namespace se
