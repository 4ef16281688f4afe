// The cache manager shared by methods that evict: explicit K/V in a LanedKvStore, one lane per
// layer (token-shared sets) or one per (layer, KV head) (per-head sets), compacted by the
// runtime's eviction plans so that evicted entries free their blocks. Optionally keeps one f32
// score per resident entry and lane (accumulated attention mass, say), which the runtime updates
// and which compaction keeps aligned with the entries. The token position of every resident entry
// is kept per lane too (the retained-position map). No prefix cache: what a finished sequence
// retained is not a prefix of anything.
//
//   lane(layer, g) = layer                          token-shared
//                  = layer * num_kv_heads + g       per KV head (entries one head wide)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/ops.h"
#include "kv/laned_kv_store.h"
#include "sparse/cache_manager.h"
#include "sparse/method_registry.h"
#include "sparse/view_builder.h"

namespace se {

struct EvictingCacheOptions {
    bool per_kv_head = false;
    // Most entries each layer keeps between steps once the method compacted (its budget). With
    // bounded_decode the method also compacts during decode, so a sequence never holds more
    // than budget + one step's tokens per lane; otherwise decode grows past the budget.
    std::vector<int32_t> layer_budgets;  // [num_layers]
    bool bounded_decode = false;
    int32_t max_step_tokens = 0;  // the longest prefill chunk (transient entries before compaction)
    bool entry_scores = false;
};

class EvictingCacheManager final : public CacheManager, private MemoryOracle {
  public:
    static Expected<std::unique_ptr<EvictingCacheManager>> create(const MethodContext& context,
                                                                  EvictingCacheOptions options);

    CacheCapacity capacity() const override;
    const MemoryOracle& oracle() const override { return *this; }
    int32_t attach_prefix(SeqId, const PrefixQuery&) override { return 0; }
    void publish_prefix(SeqId, const PrefixQuery&) override {}
    Status prepare_step(const StepPlan& plan) override;
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    // The layer's lane when one lane serves every KV head; none with a lane per KV head.
    std::optional<PlainKvStore> plain_store(int32_t layer) const override;
    AttentionView view(int32_t layer, const Selection& selection) override;
    std::vector<PayloadKind> payload_kinds() const override;
    void apply(const EvictionPlan& plan) override;
    bool supports_chains() const override { return true; }
    bool resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const override;
    Status fork_prefix(SeqId from, SeqId to, int32_t position) override;
    void drop_positions(SeqId seq, std::span<const int32_t> positions) override;
    void release(SeqId seq) override;
    void flush_prefix_cache() override {}
    RadixCacheStats prefix_cache_stats() const override { return {}; }

    int32_t num_lanes() const { return kv_.num_lanes(); }
    int32_t lane(int32_t layer, int32_t kv_head = 0) const {
        return options_.per_kv_head ? layer * num_kv_heads_ + kv_head : layer;
    }
    const LanedKvStore& kv() const { return kv_; }
    // The step's per-sequence metadata of one lane (plan order), valid until apply.
    std::span<const PagedSeq> step_seqs(int32_t lane) const { return seqs_.at(lane); }
    // i32 [num_entries(seq, lane)] the token position each resident entry holds, ascending.
    std::span<const int32_t> entry_positions(SeqId seq, int32_t lane) const;
    // f32 [num_entries(seq, lane)] scores of the resident entries (entry_scores only); entries
    // the current step added start at 0.
    std::span<float> entry_scores(SeqId seq, int32_t lane);

  private:
    EvictingCacheManager(Ops& ops, LanedKvStore kv, EvictingCacheOptions options,
                         int32_t num_layers, int32_t num_kv_heads);

    // MemoryOracle
    int64_t available_blocks() const override;
    bool fits_alone(int64_t num_tokens) const override;
    AdmissionCost admission_cost(const PrefixQuery& query, int32_t max_chunk) const override;
    int64_t step_cost(SeqId seq, int32_t num_new_tokens) const override;
    int64_t release_gain(SeqId seq) const override;

    int64_t blocks_for(int64_t entries) const;

    Ops& ops_;
    LanedKvStore kv_;
    EvictingCacheOptions options_;
    int32_t num_layers_ = 0;
    int32_t num_kv_heads_ = 0;
    // The current step.
    std::vector<std::vector<int64_t>> slots_;           // [lane] slot of each new token
    std::vector<std::vector<PagedSeq>> seqs_;           // [lane] per sequence of the step
    std::vector<std::vector<PagedKvRead>> head_reads_;  // [layer] per KV head (per-head lanes)
    std::vector<float> head_k_;                         // f32 [num_tokens, head_dim] scratch
    std::vector<float> head_v_;
    std::unordered_map<SeqId, std::vector<std::vector<float>>> scores_;       // [seq][lane]
    std::unordered_map<SeqId, std::vector<std::vector<int32_t>>> positions_;  // [seq][lane]
    ViewBuilder views_;
};

}  // namespace se
