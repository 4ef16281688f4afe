// Full-history KV: every token's K and V kept explicitly in paged blocks (one block table per
// sequence shared by all layers), with an optional radix prefix cache over finished (and fully
// prefilled) sequences' blocks. Reads are full, or a selected subset of entries or pages. The
// cache manager of every method that never evicts; a method that keeps summaries next to the KV
// derives from it and extends store().
#pragma once

#include <memory>
#include <vector>

#include "backend/ops.h"
#include "kv/paged_kv_store.h"
#include "kv/radix_cache.h"
#include "sparse/cache_manager.h"
#include "sparse/method_registry.h"
#include "sparse/view_builder.h"

namespace se {

// The store a full-history method gets from its share of KV memory; each block also pays for
// `extra_bytes_per_block` of the method's own per-block state (summaries, say).
Expected<PagedKvStore> make_full_kv_store(const MethodContext& context,
                                          int64_t extra_bytes_per_block = 0);

struct FullCacheOptions {
    bool enable_prefix_caching = true;
    // The method reads every resident entry (full selections only) and keeps no per-block state,
    // so Prefix-Cache Pruning may leave holes in its cached prefixes.
    bool allow_pruning = false;
    // The method selects every entry, always: reads are plain paged reads, and gathered reads
    // happen only over the holes pruning leaves (so a backend without gather kernels can run it
    // with pruning off).
    bool full_selections_only = false;
};

class FullCacheManager : public CacheManager, private MemoryOracle {
  public:
    FullCacheManager(Ops& ops, PagedKvStore store, FullCacheOptions options);

    CacheCapacity capacity() const override;
    const MemoryOracle& oracle() const override { return *this; }
    int32_t attach_prefix(SeqId seq, const PrefixQuery& query) override;
    void publish_prefix(SeqId seq, const PrefixQuery& query) override;
    Status prepare_step(const StepPlan& plan) override;
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    std::optional<PlainKvStore> plain_store(int32_t layer) const override;
    AttentionView view(int32_t layer, const Selection& selection) override;
    std::vector<PayloadKind> payload_kinds() const override;
    void release(SeqId seq) override;
    void flush_prefix_cache() override;
    RadixCacheStats prefix_cache_stats() const override;
    RadixCache* radix_cache() override { return radix_.get(); }
    bool resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const override;
    bool supports_pruning() const override { return radix_ && options_.allow_pruning; }

    // Starts `seq` on the cached whole-block prefix of `tokens` (all of it that is cached, a
    // pruned one too) without counting a prefix-cache query; returns the tokens it covers.
    int32_t attach_cached(SeqId seq, uint64_t ns, std::span<const int32_t> tokens);
    PagedKvStore& mutable_kv() { return store_; }

    // The step's per-sequence metadata (plan order) and the slot of each new token.
    std::span<const PagedSeq> step_seqs() const { return seqs_; }
    std::span<const int64_t> step_slots() const { return slots_; }
    const PagedKvStore& kv() const { return store_; }

  protected:
    Ops& ops() { return ops_; }

  private:
    // MemoryOracle
    int64_t available_blocks() const override;
    bool fits_alone(int64_t num_tokens) const override;
    AdmissionCost admission_cost(const PrefixQuery& query, int32_t max_chunk) const override;
    int64_t step_cost(SeqId seq, int32_t num_new_tokens) const override;
    int64_t release_gain(SeqId seq) const override;

    void attach_match(SeqId seq, const RadixMatch& m);
    // Longest prefix worth reusing: whole blocks, leaving at least one token to compute.
    int32_t usable_prefix(const PrefixQuery& query) const;

    Ops& ops_;
    PagedKvStore store_;
    FullCacheOptions options_;
    std::unique_ptr<RadixCache> radix_;  // null when prefix caching is off
    // Layout of the current step.
    std::vector<int64_t> slots_;  // i64 [num_tokens] where each new entry goes
    std::vector<PagedSeq> seqs_;  // per sequence of the step
    // Per sequence of the step, its resident entries; empty unless some sequence has holes.
    std::vector<std::vector<int32_t>> resident_;
    std::vector<int32_t> positions_scratch_;
    ViewBuilder views_;
};

}  // namespace se
