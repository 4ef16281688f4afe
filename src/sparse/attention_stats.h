// What a method may read after a layer's attention ran, when it asked for it through
// MethodRuntime::needs_attention_stats: the layer's queries and the view the kernel read. Methods
// derive their scores from these (sparse/attention_scores.h computes softmax rows over a paged
// sequence), so no kernel has to know what a method scores.
#pragma once

#include <cstdint>

#include "backend/ops.h"
#include "core/tensor_view.h"
#include "sparse/attention_view.h"
#include "sparse/step_plan.h"

namespace se {

struct AttentionStats {
    const StepPlan& plan;
    ConstTensorView q;  // f32 [num_tokens, num_heads * head_dim], after RoPE
    const AttentionView& view;
    const AttentionArgs& args;
};

}  // namespace se
