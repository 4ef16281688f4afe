// PyramidKV's runtime: SnapKV's observation-window scoring with a budget per layer. At the final
// prefill chunk of each sequence, layer l of a prompt of L tokens keeps
//
//   [0, sink)  +  top (selected_l - sink) of the pooled window scores over [sink, L - window)
//              +  [L - window, L)
//
// where selected_l comes from pyramid_schedule.h (nothing is evicted when the schedule leaves the
// prompt whole or a layer's share covers it). Decode appends without further eviction.
// Token-shared: one lane per layer. README.md gives the details.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "methods/pyramidkv/pyramid_schedule.h"
#include "sparse/evicting_cache_manager.h"
#include "sparse/method_runtime.h"
#include "sparse/ranking.h"
#include "sparse/window_scores.h"

namespace se {

struct PyramidKnobs {
    int32_t budget = 2048;  // B: entries a layer keeps on average, window included
    int32_t window = 8;     // w: the observation window, always kept
    int32_t sink = 0;       // the first entries, always kept (part of each layer's selection)
    int32_t kernel = 7;     // pooling kernel (odd)
    PoolKind pooling = PoolKind::kMax;
    int32_t beta = 20;  // the pyramid's steepness
};

class PyramidRuntime final : public MethodRuntime {
  public:
    PyramidRuntime(PyramidKnobs knobs, EvictingCacheManager& cache, int32_t num_layers)
        : knobs_(knobs), cache_(cache), num_layers_(num_layers) {}

    void prepare_step(const StepPlan& plan) override;
    bool needs_attention_stats(int32_t layer, StepPhase phase) const override;
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
    void on_attention_end(int32_t layer, const AttentionStats& stats) override;
    EvictionPlan finish_step() override;

    PyramidShape shape() const {
        return {.budget = knobs_.budget,
                .window = knobs_.window,
                .beta = knobs_.beta,
                .num_layers = num_layers_};
    }

  private:
    // The rule above for one (sequence, layer) keeping `selected` entries outside the window.
    Compaction select(SeqId seq, int32_t layer, int32_t selected, const QueryWindow& window,
                      const AttentionArgs& args) const;
    std::vector<QueryWindow>& windows_of(SeqId seq, int32_t width);

    PyramidKnobs knobs_;
    EvictingCacheManager& cache_;
    int32_t num_layers_ = 0;
    StepPlan plan_;
    // [seq][layer] the last `window` prompt query rows, from a prompt's first chunk to its last.
    std::unordered_map<SeqId, std::vector<QueryWindow>> windows_;
    // [seq] pyramid_selection of the prompts this step completes.
    std::unordered_map<SeqId, std::vector<int32_t>> selected_;
    EvictionPlan pending_;  // the step's compactions, handed over at finish_step
};

}  // namespace se
