// A method's per-step logic across layers: which entries each layer reads, what to learn from
// attention, and what to evict. The sparse controller calls the hooks in this order:
//
//   cache.prepare_step -> prepare_step
//     per layer: cache.store -> select_{prefill,decode} -> cache.view -> kernel
//                -> on_attention_end (only where needs_attention_stats) -> on_layer_end
//   -> finish_step -> cache.apply(plan)
//
// A runtime is created together with its cache manager (one Method) and may keep a reference to
// it to read sequence lengths, summaries or scores. It never allocates KV itself.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"
#include "sparse/attention_stats.h"
#include "sparse/eviction_plan.h"
#include "sparse/selection.h"
#include "sparse/step_plan.h"

namespace se {

class MethodRuntime {
  public:
    virtual ~MethodRuntime() = default;

    // Whether the method reads activations (q, k) or cached KV with host code: then it runs only
    // on a backend whose memory is the host's (the CPU). Methods whose work is all in the
    // backend's kernels say false.
    virtual bool reads_activations_on_host() const { return true; }

    // Whether the engine may queue a decode step before the tokens of the one before are on the
    // host (overlapped steps, engine.h): nothing the method does between its steps waits for or
    // reads what a step computed, and no decision of it depends on token ids. Default false.
    virtual bool overlaps_steps() const { return false; }

    // Optional. Runs once per step after the cache manager reserved room for every new token.
    // May reset per-step state and read the plan (keep a copy: the reference dies with the
    // step); must not change the cache manager's state.
    virtual void prepare_step(const StepPlan& plan) {}

    // Optional (default: never). Whether on_attention_end of `layer` in a step of `phase` needs
    // the layer's queries and view; the controller skips the hook otherwise.
    virtual bool needs_attention_stats(int32_t layer, StepPhase phase) const { return false; }

    // Required. Selection for a prefill step's layer; q f32 [num_tokens, num_heads * head_dim]
    // after RoPE, the step's keys already stored. May read q, its own state and the cache
    // manager; returns kFull for every sequence that is not decoding.
    virtual Selection select_prefill(int32_t layer, const ConstTensorView& q) = 0;

    // Required. Same for a decode step (one query row per sequence).
    virtual Selection select_decode(int32_t layer, const ConstTensorView& q) = 0;

    // Optional. The layer's attention has run; `stats` gives its queries and the view it read.
    // May update the method's own state and scores the cache manager keeps for it; must not
    // evict (eviction waits for finish_step, when every layer is done with the step's view).
    virtual void on_attention_end(int32_t layer, const AttentionStats& stats) {}

    // Optional. The layer's output is complete.
    virtual void on_layer_end(int32_t layer) {}

    // Optional (default: evict nothing). The step's forward pass is complete; returns the
    // entries to drop, which the controller hands to the cache manager's apply.
    virtual EvictionPlan finish_step() { return {}; }
};

}  // namespace se
