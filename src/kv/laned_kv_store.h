// Explicit paged K/V storage where every sequence keeps several independent sets of entries
// ("lanes"), each with its own block table and physical length, over one shared block pool.
// Methods that evict choose their lanes: one per layer (a token set per layer, as budgets or
// selections differ by layer) or one per (layer, KV head) (a set per head, entries one head wide).
//
//   arena:   [ block 0 | block 1 | ... ]   one plane each for K and V, every lane's blocks mixed
//   lane l of sequence s:  table[s][l] = { blocks, num_entries }   (entries in order)
//   every lane of s has processed the same num_tokens (the logical length)
//
// Compaction keeps a chosen subset of a lane's entries, moved to its front in order; blocks past
// the new end go back to the pool, so evicted entries really free memory.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/kv_layout.h"
#include "core/expected.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/kv_arena.h"
#include "kv/paged_kv_store.h"

namespace se {

struct LanedKvStoreOptions {
    int32_t num_lanes = 0;
    PagedKvLayout layout;  // of one lane's entries (num_kv_heads may be 1 for per-head lanes)
    int64_t num_blocks = 0;
    BackendMemory* memory = nullptr;  // where the arena lives; null: host memory
};

// The copies a compaction needs: entry slot from[i] to slot to[i], in order.
struct EntryMoves {
    std::vector<int64_t> from;
    std::vector<int64_t> to;
};

class LanedKvStore {
  public:
    static Expected<LanedKvStore> create(const LanedKvStoreOptions& options);

    int32_t num_lanes() const { return num_lanes_; }
    const PagedKvLayout& layout() const { return cache_.layout; }
    const BlockPool& pool() const { return pool_; }
    // The storage every lane's block ids index.
    const PagedKvCache& cache() const { return cache_; }
    // Bytes of one block (K and V).
    int64_t bytes_per_block() const { return arena_.shape().bytes_per_block_all_layers(); }

    // Blocks all lanes of `seq` together need to grow by `count` entries each.
    int32_t blocks_needed(SeqId seq, int32_t count) const;
    // Grows every lane of every (seq, count) pair, all or nothing.
    Status reserve(std::span<const SeqId> seqs, std::span<const int32_t> counts);
    // Claims the next `count` reserved entries on every lane for `count` new tokens;
    // slots[lane] gets the lane's new slots appended.
    void append(SeqId seq, int32_t count, std::vector<std::vector<int64_t>>& slots);

    // Keeps entries `keep` (ascending, resident) of (seq, lane) at entries [0, keep.size()) and
    // frees the blocks past them. Returns the copies that make it so, which the caller performs
    // (Ops::move_kv on cache()) before the next reserve.
    EntryMoves compact(SeqId seq, int32_t lane, std::span<const int32_t> keep);

    // Starts `to` with a copy of the first counts[lane] entries of every lane of `from`, as
    // `num_tokens` processed tokens (all or nothing: resource_exhausted when the pool is short).
    // Returns the copies, which the caller performs (Ops::move_kv on cache()).
    Expected<EntryMoves> fork(SeqId from, SeqId to, std::span<const int32_t> counts,
                              int32_t num_tokens);

    int32_t num_tokens(SeqId seq) const;
    int32_t num_entries(SeqId seq, int32_t lane) const;
    std::span<const int32_t> block_table(SeqId seq, int32_t lane) const;
    // Blocks `seq` holds over all lanes (all of them return to the pool on release).
    int32_t num_blocks_held(SeqId seq) const;
    void release(SeqId seq);
    bool contains(SeqId seq) const { return tables_.count(seq) != 0; }

  private:
    LanedKvStore(int32_t num_lanes, PagedKvLayout layout, KvArena arena);

    int32_t lane_blocks_needed(const BlockTable& table, int32_t count) const;

    int32_t num_lanes_ = 0;
    KvArena arena_;
    BlockPool pool_;
    PagedKvCache cache_;
    std::unordered_map<SeqId, std::vector<BlockTable>> tables_;  // [seq][lane]
};

}  // namespace se
