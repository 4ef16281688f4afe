// The method-agnostic facade between the model and a method: it implements the model's
// LayerAttention by driving the method's runtime and cache manager through the contract
// (method_runtime.h gives the order of the hooks), and runs the attention kernel that matches the
// view's payload.
#pragma once

#include <vector>

#include "backend/ops.h"
#include "model/layer_attention.h"
#include "sparse/cache_manager.h"
#include "sparse/method_runtime.h"

namespace se {

// Fails, naming the payload, when the cache manager can produce a view the backend cannot read.
Status check_payloads(const Ops& ops, const CacheManager& cache);

class SparseController final : public LayerAttention {
  public:
    SparseController(Ops& ops, MethodRuntime& runtime, CacheManager& cache, AttentionArgs args)
        : ops_(ops), runtime_(runtime), cache_(cache), args_(args) {}

    const AttentionArgs& args() const { return args_; }

    // Reserves KV room for the plan (all or nothing) and starts the step.
    Status begin_step(const StepPlan& plan);
    // Ends the step begun by begin_step: the runtime's eviction plan is applied.
    void end_step();

    std::optional<PlainKvStore> plain_store(int32_t layer) override;
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    void attend(int32_t layer, const ConstTensorView& q, TensorView out) override;
    void on_layer_end(int32_t layer) override;

  private:
    // One paged read per KV head over head-wide entries: the head's query columns are gathered,
    // attended with a single-KV-head layout and scattered back.
    void attend_per_head(const ConstTensorView& q, const PerHeadPagedRead& read, TensorView out);

    Ops& ops_;
    MethodRuntime& runtime_;
    CacheManager& cache_;
    AttentionArgs args_;
    StepPlan plan_;
    bool in_step_ = false;
    std::vector<float> head_q_;    // f32 [n, group * head_dim]
    std::vector<float> head_out_;  // f32 [n, group * head_dim]
};

}  // namespace se
