// SnapKV's runtime. At the final prefill chunk of each sequence every layer scores its resident
// prompt entries by the attention the last `window` prompt queries pay them
// (sparse/window_scores.h) and keeps
//
//   [0, sink)  +  top (budget - sink - window) of the pooled scores over [sink, n - window)
//              +  [n - window, n)                                        (the window itself)
//
// with n the entries resident; a prompt of at most `budget` tokens is left whole. With
// decode_interval N > 0 the same rule runs again at the end of any decode step after which a
// layer holds more than budget + N entries, scored by the last `window` queries (prompt and
// decode rows) against the resident entries. Token-shared: one lane per layer. README.md gives
// the details.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sparse/evicting_cache_manager.h"
#include "sparse/method_runtime.h"
#include "sparse/ranking.h"
#include "sparse/window_scores.h"

namespace se {

struct SnapKnobs {
    int32_t budget = 2048;  // entries a layer keeps: sink + selected + window
    int32_t window = 32;    // w: the observation window, always kept
    int32_t sink = 4;       // the first entries, always kept
    int32_t kernel = 7;     // pooling kernel (odd)
    PoolKind pooling = PoolKind::kMax;
    int32_t decode_interval = 0;  // N: re-evict in decode past budget + N entries (0: never)
};

class SnapRuntime final : public MethodRuntime {
  public:
    SnapRuntime(SnapKnobs knobs, EvictingCacheManager& cache, int32_t num_layers)
        : knobs_(knobs), cache_(cache), num_layers_(num_layers) {}

    void prepare_step(const StepPlan& plan) override;
    bool needs_attention_stats(int32_t layer, StepPhase phase) const override;
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
    void on_attention_end(int32_t layer, const AttentionStats& stats) override;
    EvictionPlan finish_step() override;

  private:
    // Whether the layer of `s` compacts after this step, holding `entries` resident entries.
    bool due(const StepSeq& s, int32_t entries) const;
    // The rule above for one (sequence, layer), scored by `window`.
    Compaction select(SeqId seq, int32_t layer, const QueryWindow& window,
                      const AttentionArgs& args) const;
    std::vector<QueryWindow>& windows_of(SeqId seq, int32_t width);

    SnapKnobs knobs_;
    EvictingCacheManager& cache_;
    int32_t num_layers_ = 0;
    StepPlan plan_;
    // [seq][layer] the last `window` query rows, kept from a prompt's first chunk to its last
    // (through decode as well when decode_interval > 0).
    std::unordered_map<SeqId, std::vector<QueryWindow>> windows_;
    EvictionPlan pending_;  // the step's compactions, handed over at finish_step
};

}  // namespace se
