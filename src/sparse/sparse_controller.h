// The method-agnostic facade between the model and a method: it implements the model's
// LayerAttention by driving the method's runtime and cache manager through the contract, and
// runs the attention kernel that matches the view's payload.
#pragma once

#include "backend/ops.h"
#include "model/layer_attention.h"
#include "sparse/cache_manager.h"
#include "sparse/method_runtime.h"

namespace se {

class SparseController final : public LayerAttention {
  public:
    SparseController(Ops& ops, MethodRuntime& runtime, CacheManager& cache, AttentionArgs args)
        : ops_(ops), runtime_(runtime), cache_(cache), args_(args) {}

    // Reserves KV room for the plan (all or nothing) and starts the step.
    Status begin_step(const StepPlan& plan);
    // Ends the step begun by begin_step.
    void end_step();

    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    void attend(int32_t layer, const ConstTensorView& q, TensorView out) override;
    void on_layer_end(int32_t layer) override;

  private:
    Ops& ops_;
    MethodRuntime& runtime_;
    CacheManager& cache_;
    AttentionArgs args_;
    StepPhase phase_ = StepPhase::kPrefill;
    bool in_step_ = false;
};

}  // namespace se
