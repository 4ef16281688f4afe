// Observation-window eviction: a runtime that keeps, per layer, the sinks, the entries the last
// `window` queries attend to most (sparse/window_scores.h), and the window itself. It records the
// last `window` query rows of every (sequence, layer) across prefill chunks; at the final prefill
// chunk of a sequence of L tokens, layer l holding n resident entries with n > selected_l + window
// keeps
//
//   [0, sink)  +  top (selected_l - sink) of the pooled window scores over [sink, n - window)
//              +  [n - window, n)                                          (the window itself)
//
// where selected_l = schedule(L)[l] (the sinks included; an empty schedule leaves the sequence
// whole). With decode_interval N > 0 the same rule runs again at the end of any decode step after
// which a layer holds more than selected_l + window + N entries, scored by the last `window`
// queries (prompt and decode rows) against the resident entries; otherwise decode appends without
// eviction. Token-shared: one lane per layer. Under tensor parallelism the scores are reduced over
// the ranks (window_scores.h), so every rank keeps the same entries.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sparse/evicting_cache_manager.h"
#include "sparse/knobs.h"
#include "sparse/method_runtime.h"
#include "sparse/ranking.h"
#include "sparse/window_scores.h"

namespace se {

// i32 [num_layers] the entries each layer selects outside the window (sinks included) for a
// sequence of `num_tokens` tokens; empty when the sequence stays whole.
using WindowSelectionSchedule = std::function<std::vector<int32_t>(int32_t num_tokens)>;

// The knobs of the scoring and the keep rule that every method on this runtime reads.
struct WindowRule {
    int32_t window = 1;  // w: the observation window, always kept
    int32_t sink = 0;    // the first entries, always kept (part of each layer's selection)
    int32_t kernel = 1;  // pooling kernel (odd)
    PoolKind pooling = PoolKind::kMax;
};

// Reads the knobs `window` (>= 1), `sink` (>= 0), `kernel` (odd, >= 1) and `pooling` ("max" or
// "avg"), in that order, into `rule`, whose values are the defaults.
Status parse_window_rule(const Knobs& knobs, WindowRule& rule);

struct WindowEvictionOptions {
    WindowRule rule;
    int32_t decode_interval = 0;  // N: re-evict in decode past selected + window + N (0: never)
    WindowSelectionSchedule schedule;
    Communicator* comm = nullptr;  // the tensor-parallel group (null: one rank)
};

class WindowEvictionRuntime final : public MethodRuntime {
  public:
    WindowEvictionRuntime(WindowEvictionOptions options, EvictingCacheManager& cache,
                          int32_t num_layers)
        : options_(std::move(options)), cache_(cache), num_layers_(num_layers) {}

    void prepare_step(const StepPlan& plan) override;
    bool needs_attention_stats(int32_t layer, StepPhase phase) const override;
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
    void on_attention_end(int32_t layer, const AttentionStats& stats) override;
    EvictionPlan finish_step() override;

  private:
    // The rule above for one (sequence, layer) keeping `selected` entries outside the window.
    Compaction select(SeqId seq, int32_t layer, int32_t selected, const QueryWindow& window,
                      const AttentionArgs& args) const;
    std::vector<QueryWindow>& windows_of(SeqId seq, int32_t width);

    WindowEvictionOptions options_;
    EvictingCacheManager& cache_;
    int32_t num_layers_ = 0;
    StepPlan plan_;
    // [seq][layer] the last `window` query rows, kept from a prompt's first chunk to its last
    // (through decode as well when decode_interval > 0).
    std::unordered_map<SeqId, std::vector<QueryWindow>> windows_;
    // [seq] the schedule of the sequences that may compact after this step.
    std::unordered_map<SeqId, std::vector<int32_t>> selected_;
    EvictionPlan pending_;  // the step's compactions, handed over at finish_step
};

}  // namespace se
