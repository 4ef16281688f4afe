// The engine's view of the cache managers of a tensor-parallel group. Every rank runs its own copy
// of the method over its KV heads; their block allocation, lengths, prefix caches and chains must
// stay identical, because the scheduler plans once for all of them. This wrapper gives the engine
// one CacheManager: operations that change state go to every rank, in rank order, and their
// results are compared (a difference means the ranks diverged: a bug, so the process stops with
// the operation's name); queries answer from rank 0, except capacity: the oracle answers for the
// tightest rank (least available, largest cost), since methods that split a budget unevenly over
// KV heads fill the ranks' pools unevenly.
//
// Step work does not pass through here: each rank's SparseController drives its own cache
// manager (prepare_step, store, view, apply) on the rank's thread.
#pragma once

#include <memory>
#include <vector>

#include "sparse/cache_manager.h"

namespace se {

class MirroredCacheManager final : public CacheManager {
  public:
    // ranks[0] is rank 0's; the wrapper owns them all.
    explicit MirroredCacheManager(std::vector<std::unique_ptr<CacheManager>> ranks);

    // Rank r's cache manager (for its controller and runtime).
    CacheManager& rank(int32_t r) const { return *ranks_[static_cast<size_t>(r)]; }
    int32_t size() const { return static_cast<int32_t>(ranks_.size()); }

    // Whether every rank retains the same state for `seq` (a Chain Cache chain being parked): one
    // digest per rank of the positions each of the `num_layers` layers holds (resident_keys) and
    // of the blocks releasing it would free, compared with rank 0's. Methods with a set of
    // entries per KV head (no resident_keys) are compared by their block counts alone.
    bool ranks_agree_on(SeqId seq, int32_t num_layers) const;

    CacheCapacity capacity() const override;
    const MemoryOracle& oracle() const override { return oracle_; }
    int32_t attach_prefix(SeqId seq, const PrefixQuery& query) override;
    void publish_prefix(SeqId seq, const PrefixQuery& query) override;
    Status prepare_step(const StepPlan& plan) override;
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    AttentionView view(int32_t layer, const Selection& selection) override;
    std::vector<PayloadKind> payload_kinds() const override;
    void apply(const EvictionPlan& plan) override;
    bool supports_chains() const override { return ranks_.front()->supports_chains(); }
    void release(SeqId seq) override;
    void flush_prefix_cache() override;
    RadixCacheStats prefix_cache_stats() const override;
    RadixCache* radix_cache() override { return ranks_.front()->radix_cache(); }
    bool resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const override;
    Status fork_prefix(SeqId from, SeqId to, int32_t position) override;
    void drop_positions(SeqId seq, std::span<const int32_t> positions) override;
    bool supports_pruning() const override { return ranks_.front()->supports_pruning(); }

  private:
    class TightestOracle final : public MemoryOracle {
      public:
        explicit TightestOracle(const std::vector<std::unique_ptr<CacheManager>>& ranks)
            : ranks_(ranks) {}
        int64_t available_blocks() const override;
        bool fits_alone(int64_t num_tokens) const override;
        AdmissionCost admission_cost(const PrefixQuery& query, int32_t max_chunk) const override;
        int64_t step_cost(SeqId seq, int32_t num_new_tokens) const override;
        int64_t release_gain(SeqId seq) const override;

      private:
        const std::vector<std::unique_ptr<CacheManager>>& ranks_;
    };

    std::vector<std::unique_ptr<CacheManager>> ranks_;
    TightestOracle oracle_{ranks_};
};

}  // namespace se
