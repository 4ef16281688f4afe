// Paged causal attention over a ragged batch (prefill chunks and decode rows mixed), split into
// work items run in parallel:
//   * one item per (sequence, tile of query rows) covering all heads, so that each KV block is
//     read once per tile, sequentially; a tile holds about kTileQueries query vectors per KV
//     head (rows x the query heads of its GQA group);
//   * few items for the threads (decode, long contexts): each tile's KV partitions
//     (attention_tile.h) become items of their own, whose states are folded afterwards.
//
// Row invariance: a query row's output depends only on its query and its sequence's entries
// [0, limit], never on q_len, on the tile or the other sequences of the step, on the thread
// count or on the split. Partitions and chunks sit at absolute entry indices, masked entries
// contribute exactly nothing, and the partition states are folded in order by the same
// merge_partition whether one tile runs them all or each runs as its own item. So a decode row,
// any row of any prefill chunking, alone or batched, gets the same bits:
// tests/backend/attention_invariance_test.cc checks it.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/attention_tile.h"
#include "backend/cpu/scratch.h"
#include "backend/ops.h"

namespace se::cpu {

class PagedAttention {
  public:
    // out f32 [n, num_heads * head_dim] = attention of q f32 [n, num_heads * head_dim] over kv.
    void run(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
             TensorView out, Scratch& scratch);

  private:
    struct Item {
        int32_t seq = 0;
        int32_t row_begin = 0;  // within the sequence
        int32_t num_rows = 0;
        int32_t kv_begin = 0;
        int32_t kv_end = 0;
        int64_t partial = -1;  // f32 offset of the item's softmax state, -1: writes out directly
    };
    // Partitions of one tile run as items, consecutive in items_, folded into out after all
    // items ran.
    struct Merge {
        int64_t first_item = 0;
        int32_t num_splits = 0;
    };

    // The arguments of one run() call, for the per-item work.
    struct Call {
        const ConstTensorView& q;
        const PagedKvRead& kv;
        const AttentionArgs& args;
        TensorView out;
        float* partials;
    };

    void run_item(const Item& item, const Call& call, const TileScratch& ts, float* own) const;
    static float* output_row(const PagedSeq& seq, const Item& item, int64_t r, int32_t group,
                             const AttentionArgs& args, TensorView out);
    void plan(const PagedKvRead& kv, const AttentionArgs& args, int32_t num_threads);
    void add_partitions(const Item& tile, int32_t partition, const AttentionArgs& args);
    int64_t partial_floats(const AttentionArgs& args, int32_t num_rows) const;
    static TileState partial_state(const Item& item, const AttentionArgs& args, float* partials);
    void merge(const Merge& merge, const PagedKvRead& kv, const AttentionArgs& args,
               float* partials, TensorView out) const;

    std::vector<Item> items_;  // reused across calls
    std::vector<Merge> merges_;
    int64_t partials_size_ = 0;  // f32 elements of partial states this call
};

}  // namespace se::cpu
