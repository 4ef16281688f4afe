// H2O: keep the recent entries plus the heavy hitters, the older entries that received the most
// attention mass so far, `budget` entries per layer, evicting physically after every step.
// Token-shared, one lane per layer; the accumulated mass lives in the cache manager as entry
// scores, compacted together with the KV. Under tensor parallelism each step's mass is summed
// over the ranks' query heads before it is added, so every rank holds the same scores and evicts
// the same entries. README.md gives the rule and the knobs.
#include <fmt/core.h>

#include <cmath>
#include <memory>
#include <variant>

#include "methods/h2o/attention_mass.h"
#include "methods/h2o/heavy_hitters.h"
#include "sparse/evicting_cache_manager.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"
#include "sparse/rank_reduce.h"

namespace se {
namespace {

struct H2oKnobs {
    int32_t budget = 4096;       // recent + heavy hitters, per layer
    double recent_ratio = 0.5;   // recent = round(recent_ratio * budget)
    int32_t evict_interval = 1;  // evict once a layer holds budget + evict_interval entries
    int32_t recent = 2048;       // derived
};

class H2oRuntime final : public MethodRuntime {
  public:
    H2oRuntime(H2oKnobs knobs, EvictingCacheManager& cache, const MethodContext& context)
        : knobs_(knobs),
          cache_(cache),
          num_layers_(context.model.num_layers),
          num_threads_(context.num_threads),
          comm_(context.comm) {}

    void prepare_step(const StepPlan& plan) override { plan_ = plan; }
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
    bool needs_attention_stats(int32_t, StepPhase) const override { return true; }

    // Every query row of the step adds its softmax row over the entries it read.
    void on_attention_end(int32_t layer, const AttentionStats& stats) override {
        const PagedKvRead& read = std::get<PagedKvRead>(stats.view.payload);
        SE_CHECK(read.seqs.size() == stats.plan.seqs.size());
        // Every sequence's mass side by side: one reduction over the ranks per layer.
        mass_.clear();
        for (const PagedSeq& seq : read.seqs) {
            const std::vector<float> m =
                h2o::step_attention_mass(*read.cache, seq, stats.q, stats.args, num_threads_);
            mass_.insert(mass_.end(), m.begin(), m.end());
        }
        sum_over_ranks(comm_, mass_);
        const float* m = mass_.data();
        for (size_t i = 0; i < read.seqs.size(); ++i) {
            const std::span<float> acc =
                cache_.entry_scores(stats.plan.seqs[i].seq_id, cache_.lane(layer));
            SE_CHECK(static_cast<int32_t>(acc.size()) == read.seqs[i].kv_len,
                     "%zu scores for %d entries", acc.size(), read.seqs[i].kv_len);
            for (float& a : acc) a += *m++;
        }
    }

    EvictionPlan finish_step() override {
        EvictionPlan plan;
        const int32_t limit = knobs_.budget + knobs_.evict_interval - 1;
        for (const StepSeq& s : plan_.seqs) {
            for (int32_t layer = 0; layer < num_layers_; ++layer) {
                const int32_t lane = cache_.lane(layer);
                if (cache_.kv().num_entries(s.seq_id, lane) <= limit) continue;
                plan.compactions.push_back(
                    {.seq = s.seq_id,
                     .lane = lane,
                     .keep = h2o::heavy_hitter_keep(cache_.entry_scores(s.seq_id, lane),
                                                    knobs_.budget, knobs_.recent)});
            }
        }
        return plan;
    }

  private:
    H2oKnobs knobs_;
    EvictingCacheManager& cache_;
    int32_t num_layers_ = 0;
    int32_t num_threads_ = 0;
    Communicator* comm_ = nullptr;  // the tensor-parallel group (null: one rank)
    StepPlan plan_;
    std::vector<float> mass_;  // f32 [sum of the step's kv_len]: the layer's step mass
};

Expected<H2oKnobs> parse_knobs(const nlohmann::json& json) {
    SE_ASSIGN_OR_RETURN(Knobs knobs,
                        Knobs::parse("h2o", json, {"budget", "recent_ratio", "evict_interval"}));
    H2oKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_ASSIGN_OR_RETURN(k.recent_ratio, knobs.number("recent_ratio", k.recent_ratio, 0.0, 1.0));
    SE_ASSIGN_OR_RETURN(k.evict_interval,
                        knobs.integer("evict_interval", k.evict_interval, 1, 1 << 20));
    k.recent = static_cast<int32_t>(std::lround(k.recent_ratio * k.budget));
    return k;
}

Expected<Method> create_h2o(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(H2oKnobs k, parse_knobs(context.knobs));
    const int32_t num_layers = context.model.num_layers;
    // Between steps a lane holds at most budget + evict_interval - 1 entries, and a step adds at
    // most max_step_tokens more before it is compacted.
    SE_ASSIGN_OR_RETURN(
        std::unique_ptr<EvictingCacheManager> cache,
        EvictingCacheManager::create(
            context,
            {.layer_budgets = std::vector<int32_t>(static_cast<size_t>(num_layers), k.budget),
             .bounded_decode = true,
             .max_step_tokens = context.max_step_tokens + k.evict_interval - 1,
             .entry_scores = true}));
    auto runtime = std::make_unique<H2oRuntime>(k, *cache, context);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"h2o", &create_h2o};

}  // namespace
}  // namespace se
