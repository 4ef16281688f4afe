// Quest's cache: full-history KV (FullCacheManager, prefix cache included) plus a summary of
// every KV block: per (layer, physical block, KV head) the elementwise min and max of the keys
// stored in the block. Summaries are indexed by physical block id, so blocks a sequence takes
// from the prefix cache bring their summaries with them.
//
//   block b, layer l, KV head g:  min[l][b][g][:] = min over the block's stored rows of k[g][:]
//                                 max[l][b][g][:] = max over them
//   a write to row 0 starts the block afresh (its previous owner's summary is discarded);
//   a write to row r > 0 folds the key into the running min and max.
//
// Rows of a block are always written in order, row 0 first (sequences grow one entry at a time
// and a cached prefix covers whole blocks), so the summary always covers exactly the rows written.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sparse/full_cache_manager.h"

namespace se {

class QuestCacheManager final : public FullCacheManager {
  public:
    // Bytes the summaries of one block take over all layers (f32 min and max): what
    // make_full_kv_store must charge each block on top of its KV.
    static int64_t summary_bytes_per_block(int32_t num_layers, const PagedKvLayout& layout);

    QuestCacheManager(Ops& ops, PagedKvStore store, int32_t num_layers, bool enable_prefix_caching);

    // Stores the step's keys and values, then folds the stored keys into their blocks' summaries.
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    // None: store must see every step's keys, for the summaries.
    std::optional<PlainKvStore> plain_store(int32_t) const override { return std::nullopt; }

    // f32 [head_dim]: the elementwise min (max) of the keys of `kv_head` held in `block`.
    std::span<const float> key_min(int32_t layer, int32_t block, int32_t kv_head) const;
    std::span<const float> key_max(int32_t layer, int32_t block, int32_t kv_head) const;

  private:
    int64_t offset(int32_t layer, int32_t block, int32_t kv_head) const;

    int32_t num_layers_ = 0;
    int64_t num_blocks_ = 0;
    int32_t num_kv_heads_ = 0;
    int32_t head_dim_ = 0;
    std::vector<float> min_;  // f32 [num_layers, num_blocks, num_kv_heads, head_dim]
    std::vector<float> max_;  // f32 [num_layers, num_blocks, num_kv_heads, head_dim]
    std::vector<float> key_;  // f32 [num_kv_heads * head_dim], one stored key read back
};

}  // namespace se
