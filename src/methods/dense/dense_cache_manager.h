// Dense KV: every token's K and V kept explicitly in paged blocks, read in full.
#pragma once

#include <vector>

#include "backend/ops.h"
#include "kv/paged_kv_store.h"
#include "sparse/cache_manager.h"

namespace se {

class DenseCacheManager final : public CacheManager {
  public:
    DenseCacheManager(Ops& ops, PagedKvStore store) : ops_(ops), store_(std::move(store)) {}

    CacheCapacity capacity() const override;
    Status prepare_step(const StepPlan& plan) override;
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    AttentionView view(int32_t layer, const Selection& selection) const override;
    void release(SeqId seq) override;

  private:
    Ops& ops_;
    PagedKvStore store_;
    // Layout of the current step.
    std::vector<int64_t> slots_;  // i64 [num_tokens] where each new entry goes
    std::vector<PagedSeq> seqs_;  // per sequence of the step
};

}  // namespace se
