// Dense KV: every token's K and V kept explicitly in paged blocks, read in full, with an optional
// radix prefix cache over finished (and fully prefilled) sequences' blocks.
#pragma once

#include <memory>
#include <vector>

#include "backend/ops.h"
#include "kv/paged_kv_store.h"
#include "kv/radix_cache.h"
#include "sparse/cache_manager.h"

namespace se {

class DenseCacheManager final : public CacheManager, private MemoryOracle {
  public:
    DenseCacheManager(Ops& ops, PagedKvStore store, bool enable_prefix_caching);

    CacheCapacity capacity() const override;
    const MemoryOracle& oracle() const override { return *this; }
    int32_t attach_prefix(SeqId seq, const PrefixQuery& query) override;
    void publish_prefix(SeqId seq, const PrefixQuery& query) override;
    Status prepare_step(const StepPlan& plan) override;
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    AttentionView view(int32_t layer, const Selection& selection) const override;
    void release(SeqId seq) override;
    void flush_prefix_cache() override;
    RadixCacheStats prefix_cache_stats() const override;

  private:
    // MemoryOracle
    int64_t available_blocks() const override;
    bool fits_alone(int64_t num_tokens) const override;
    AdmissionCost admission_cost(const PrefixQuery& query, int32_t max_chunk) const override;
    int64_t step_cost(SeqId seq, int32_t num_new_tokens) const override;
    int64_t release_gain(SeqId seq) const override;

    // Longest prefix worth reusing: whole blocks, leaving at least one token to compute.
    int32_t usable_prefix(const PrefixQuery& query) const;

    Ops& ops_;
    PagedKvStore store_;
    std::unique_ptr<RadixCache> radix_;  // null when prefix caching is off
    // Layout of the current step.
    std::vector<int64_t> slots_;  // i64 [num_tokens] where each new entry goes
    std::vector<PagedSeq> seqs_;  // per sequence of the step
};

}  // namespace se
