// Explicit paged K/V storage shared by the methods that keep entries as plain vectors: a block
// pool, the arena behind it, and one block table per sequence.
//
//   sequence entries:   [0 ........ num_entries) [num_entries ... num_entries + count)
//                        already stored             reserved by reserve(), slots by append()
//   entry j lives in block table[j / block_size], row j % block_size;
//   its slot (what store_kv writes to) is table[j / block_size] * block_size + j % block_size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/kv_layout.h"
#include "core/expected.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/kv_arena.h"

namespace se {

using SeqId = int64_t;

struct PagedKvStoreOptions {
    int32_t num_layers = 0;
    PagedKvLayout layout;
    int64_t num_blocks = 0;
    BackendMemory* memory = nullptr;  // where the arena lives; null: host memory
};

class PagedKvStore {
  public:
    static Expected<PagedKvStore> create(const PagedKvStoreOptions& options);

    const PagedKvLayout& layout() const { return layout_; }
    const BlockPool& pool() const { return pool_; }
    BlockPool& pool() { return pool_; }
    const PagedKvCache& layer_cache(int32_t layer) const { return layer_caches_.at(layer); }
    int32_t num_layers() const { return static_cast<int32_t>(layer_caches_.size()); }
    // Bytes one block takes over all layers (K and V).
    int64_t bytes_per_block() const { return arena_.shape().bytes_per_block_all_layers(); }

    // Blocks `seq` would need to grow by `count` entries.
    int32_t blocks_needed(SeqId seq, int32_t count) const;
    // Grows the block tables of every (seq, count) pair, all or nothing.
    Status reserve(std::span<const SeqId> seqs, std::span<const int32_t> counts);
    // Claims the next `count` reserved entries of `seq` for `count` new tokens, appending their
    // slots to `slots`.
    void append(SeqId seq, int32_t count, std::vector<int64_t>& slots);

    // Starts `seq` on blocks that already hold the KV of its first `num_tokens` tokens (a cached
    // prefix): takes a pool reference on each.
    void attach(SeqId seq, std::span<const int32_t> blocks, int32_t num_tokens);
    // Starts `seq` on a pruned cached prefix of `num_tokens` tokens whose resident entries live
    // at `slots` (ascending token positions `positions`) in `blocks`: the sequence has holes
    // (block_table.h) and its own entries start in a fresh block.
    void attach_pruned(SeqId seq, std::span<const int32_t> blocks, std::span<const int64_t> slots,
                       std::span<const int32_t> positions, int32_t num_tokens);

    int32_t num_entries(SeqId seq) const;
    int32_t num_tokens(SeqId seq) const;
    std::span<const int32_t> block_table(SeqId seq) const;
    // The whole table (holes included), or null for an unknown sequence.
    const BlockTable* table(SeqId seq) const;
    // Whether `seq` started on a pruned prefix (its entries are not contiguous).
    bool holed(SeqId seq) const;
    // The entries of `seq` that hold KV, ascending, and the token position of each.
    void resident_entries(SeqId seq, std::vector<int32_t>& entries,
                          std::vector<int32_t>& positions) const;
    // Blocks releasing `seq` would return to the pool (those nobody else holds).
    int32_t num_exclusive_blocks(SeqId seq) const;
    // Returns every block of `seq` to the pool.
    void release(SeqId seq);
    bool contains(SeqId seq) const { return tables_.count(seq) != 0; }

  private:
    PagedKvStore(PagedKvLayout layout, KvArena arena, int32_t num_layers);

    PagedKvLayout layout_;
    KvArena arena_;
    BlockPool pool_;
    std::vector<PagedKvCache> layer_caches_;
    std::unordered_map<SeqId, BlockTable> tables_;
};

}  // namespace se
