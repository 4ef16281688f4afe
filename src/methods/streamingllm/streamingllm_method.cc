// StreamingLLM: keep the first `sink` tokens and the most recent ones, `budget` entries in all,
// evicting physically after every step. Token-shared, one lane per layer. README.md gives the
// rule and the knobs.
#include <fmt/core.h>

#include <memory>

#include "sparse/evicting_cache_manager.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"

namespace se {
namespace {

struct StreamingKnobs {
    int32_t sink = 4;
    int32_t budget = 1024;  // sink + recent
};

class StreamingRuntime final : public MethodRuntime {
  public:
    StreamingRuntime(StreamingKnobs knobs, EvictingCacheManager& cache, int32_t num_layers)
        : knobs_(knobs), cache_(cache), num_layers_(num_layers) {}

    void prepare_step(const StepPlan& plan) override { plan_ = plan; }
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }

    // After each step every layer holds entries [0, sink) and the last budget - sink.
    EvictionPlan finish_step() override {
        EvictionPlan plan;
        const int32_t recent = knobs_.budget - knobs_.sink;
        for (const StepSeq& s : plan_.seqs) {
            for (int32_t layer = 0; layer < num_layers_; ++layer) {
                const int32_t lane = cache_.lane(layer);
                const int32_t n = cache_.kv().num_entries(s.seq_id, lane);
                if (n <= knobs_.budget) continue;
                Compaction c{.seq = s.seq_id, .lane = lane, .keep = {}};
                for (int32_t j = 0; j < knobs_.sink; ++j) c.keep.push_back(j);
                for (int32_t j = n - recent; j < n; ++j) c.keep.push_back(j);
                plan.compactions.push_back(std::move(c));
            }
        }
        return plan;
    }

  private:
    StreamingKnobs knobs_;
    EvictingCacheManager& cache_;
    int32_t num_layers_ = 0;
    StepPlan plan_;
};

Expected<Method> create_streamingllm(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(Knobs knobs,
                        Knobs::parse("streamingllm", context.knobs, {"sink", "budget"}));
    StreamingKnobs k;
    SE_ASSIGN_OR_RETURN(k.sink, knobs.integer("sink", k.sink, 0));
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    if (k.budget <= k.sink) {
        return knobs.error("budget", fmt::format("({}) must exceed sink ({}): the recent window "
                                                 "would be empty",
                                                 k.budget, k.sink));
    }
    const int32_t num_layers = context.model.num_layers;
    SE_ASSIGN_OR_RETURN(
        std::unique_ptr<EvictingCacheManager> cache,
        EvictingCacheManager::create(context, {.layer_budgets = std::vector<int32_t>(
                                                   static_cast<size_t>(num_layers), k.budget),
                                               .bounded_decode = true,
                                               .max_step_tokens = context.max_step_tokens}));
    auto runtime = std::make_unique<StreamingRuntime>(k, *cache, num_layers);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"streamingllm", &create_streamingllm};

}  // namespace
}  // namespace se
