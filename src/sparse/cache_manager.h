// A method's owner of persistent KV state (payload, per-sequence tables, and later summaries,
// scores or scales). The core drives it through this interface and never looks inside.
//
// Per step: prepare_step (reserve, all or nothing) -> per layer store, view -> apply (the
// runtime's eviction plan) -> release when a sequence finishes.
//
// Lengths: a sequence's logical length is the tokens it processed; its physical length (per
// lane) is the entries resident. Methods that evict make them differ; the scheduler's step plan
// always speaks in logical tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/expected.h"
#include "core/tensor_view.h"
#include "kv/paged_kv_store.h"
#include "kv/radix_cache.h"
#include "sparse/attention_view.h"
#include "sparse/eviction_plan.h"
#include "sparse/memory_oracle.h"
#include "sparse/selection.h"
#include "sparse/step_plan.h"

namespace se {

struct CacheCapacity {
    int64_t num_blocks = 0;         // blocks in the pool
    int64_t num_free_blocks = 0;    // blocks free now
    int64_t num_cached_blocks = 0;  // blocks the prefix cache holds (some may be in use too)
    int32_t block_size = 0;         // entries per block
    int32_t entries_per_token = 1;  // entries one token of full history takes (one per lane)
};

// The keys one sequence holds in one layer, for scoring them from outside the method (pruning):
// entry j of the sequence lives at block_table[j / block_size] of `cache`; `entries` lists the
// resident ones (ascending; others are holes) and `positions` the token each holds.
struct ResidentKeys {
    const PagedKvCache* cache = nullptr;
    std::span<const int32_t> block_table;
    int32_t num_entries = 0;         // the entry ids run over [0, num_entries)
    std::vector<int32_t> entries;    // i32 [resident]
    std::vector<int32_t> positions;  // i32 [resident], ascending
};

class CacheManager {
  public:
    virtual ~CacheManager() = default;

    // Required. Pool size and what is free now.
    virtual CacheCapacity capacity() const = 0;

    // Required. The method's answers to the scheduler's cost questions.
    virtual const MemoryOracle& oracle() const = 0;

    // Required. Starts `seq` from the longest usable cached prefix of query.tokens and returns
    // how many tokens it covers (0 when the method keeps no prefix cache or nothing matches).
    // Must agree with oracle().admission_cost for the same state.
    virtual int32_t attach_prefix(SeqId seq, const PrefixQuery& query) = 0;

    // Required. Offers the KV of `seq`'s first computed tokens (query.tokens) to the prefix
    // cache, if the method keeps one; the sequence keeps running.
    virtual void publish_prefix(SeqId seq, const PrefixQuery& query) = 0;

    // Required. Reserves room for every new token of the plan and records where each goes.
    // All or nothing: on failure (resource_exhausted) no sequence's state has changed.
    virtual Status prepare_step(const StepPlan& plan) = 0;

    // Required. Writes the step's keys and values for `layer`, row i = the step's token i.
    // k, v: f32 [num_tokens, num_kv_heads * head_dim]
    virtual void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) = 0;

    // Optional (default: none). Where `layer`'s keys and values of the step go when store would
    // do nothing but write row i to one slot of one cache (PlainKvStore); the model then writes
    // them in the kernel that rotates the keys and store is not called for the layer. A method
    // that does more when it stores (summaries, per-head lanes) answers none.
    virtual std::optional<PlainKvStore> plain_store(int32_t layer) const { return std::nullopt; }

    // Required. What the kernel reads for `layer` under `selection`; valid until the next view
    // of the layer or prepare_step.
    virtual AttentionView view(int32_t layer, const Selection& selection) = 0;

    // Required. The payload kinds view() can return (checked against the backend at start-up).
    virtual std::vector<PayloadKind> payload_kinds() const = 0;

    // Optional for methods that never evict (their plans are always empty). Drops the entries
    // the plan does not keep, moving the kept ones to the front in order and returning emptied
    // blocks to the pool; the logical length is unchanged.
    virtual void apply(const EvictionPlan& plan) {
        SE_CHECK(plan.empty(), "this cache manager does not evict");
    }

    // Optional (default: no). Whether a finished sequence's state may stay held (release not
    // called) and a later request continue it under the same SeqId, prefilling only new tokens
    // (the Chain Cache). Requires that nothing about a sequence is forgotten before release, and
    // that the runtime keys whatever it keeps per sequence by SeqId. Eviction methods say yes:
    // a prefix cache cannot match what they retained.
    virtual bool supports_chains() const { return false; }

    // Required. Frees everything held for `seq`; a no-op for unknown sequences.
    virtual void release(SeqId seq) = 0;

    // Required. Drops every prefix-cache entry no sequence uses.
    virtual void flush_prefix_cache() = 0;

    // Required. Prefix-cache counters (all zero without a prefix cache).
    virtual RadixCacheStats prefix_cache_stats() const = 0;

    // Optional (default: none). The radix prefix cache, for operations on a cached prefix
    // (inspect, delete a subtree, eviction priority); null when the method keeps none.
    virtual RadixCache* radix_cache() { return nullptr; }

    // Optional (default: false, nothing written). The keys `seq` holds in `layer` with one set of
    // entries shared by every head (methods with per-head sets answer false).
    virtual bool resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const { return false; }

    // Optional for methods that support chains (default: unimplemented). Starts `to` as a copy
    // of what `from` holds for its tokens before `position` (logical length `position`), for a
    // scoring pass that must leave `from` untouched; all or nothing.
    virtual Status fork_prefix(SeqId from, SeqId to, int32_t position) {
        return failed_precondition("this method's state cannot be copied");
    }

    // Optional for methods that support chains. Drops the entries of `seq` that hold the tokens
    // at `positions` (ascending), in every set, returning emptied blocks to the pool (Chain Cache
    // pruning); the logical length is unchanged.
    virtual void drop_positions(SeqId seq, std::span<const int32_t> positions) {
        SE_CHECK(positions.empty(), "this cache manager cannot drop entries");
    }

    // Optional (default: no). Whether Prefix-Cache Pruning may leave holes in this method's
    // cached prefixes: it must read full selections only, keep no per-block state of its own,
    // and derive from FullCacheManager (the engine's prune job works on its store).
    virtual bool supports_pruning() const { return false; }
};

}  // namespace se
