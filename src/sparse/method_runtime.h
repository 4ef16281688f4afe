// A method's per-step logic across layers: which entries each layer reads, and (for methods that
// need them) what to learn from attention. The sparse controller calls the hooks in this order:
//
//   prepare_step -> per layer: select_{prefill,decode} -> (kernel) -> on_attention_end
//                              -> on_layer_end
//                -> finish_step
#pragma once

#include <cstdint>

#include "core/tensor_view.h"
#include "sparse/selection.h"
#include "sparse/step_plan.h"

namespace se {

class MethodRuntime {
  public:
    virtual ~MethodRuntime() = default;

    // Optional. Runs once per step after the cache manager reserved room. May reset per-step
    // scratch; must not touch the cache manager's state.
    virtual void prepare_step(const StepPlan& plan) {}

    // Required. Selection for a prefill step's layer; q f32 [num_tokens, num_heads * head_dim]
    // after RoPE. May read q and its own state only.
    virtual Selection select_prefill(int32_t layer, const ConstTensorView& q) = 0;

    // Required. Same for a decode step (one query row per sequence).
    virtual Selection select_decode(int32_t layer, const ConstTensorView& q) = 0;

    // Optional. The layer's attention has run.
    virtual void on_attention_end(int32_t layer) {}

    // Optional. The layer's output is complete.
    virtual void on_layer_end(int32_t layer) {}

    // Optional. The step's forward pass is complete.
    virtual void finish_step() {}
};

}  // namespace se
