#include "methods/quest/quest_cache_manager.h"

#include <algorithm>

#include "core/float_elems.h"

namespace se {

int64_t QuestCacheManager::summary_bytes_per_block(int32_t num_layers,
                                                   const PagedKvLayout& layout) {
    return int64_t{num_layers} * 2 * layout.entry_elems() * static_cast<int64_t>(sizeof(float));
}

QuestCacheManager::QuestCacheManager(Ops& ops, PagedKvStore store, int32_t num_layers,
                                     bool enable_prefix_caching)
    : FullCacheManager(ops, std::move(store),
                       FullCacheOptions{.enable_prefix_caching = enable_prefix_caching}),
      num_layers_(num_layers),
      num_blocks_(kv().pool().num_blocks()),
      num_kv_heads_(kv().layout().num_kv_heads),
      head_dim_(kv().layout().head_dim) {
    const auto n = static_cast<size_t>(num_layers_ * num_blocks_ * kv().layout().entry_elems());
    min_.assign(n, 0.0f);
    max_.assign(n, 0.0f);
    key_.resize(static_cast<size_t>(kv().layout().entry_elems()));
}

int64_t QuestCacheManager::offset(int32_t layer, int32_t block, int32_t kv_head) const {
    SE_CHECK(layer >= 0 && layer < num_layers_ && block >= 0 && block < num_blocks_ &&
                 kv_head >= 0 && kv_head < num_kv_heads_,
             "summary of layer %d block %d KV head %d out of range", layer, block, kv_head);
    return ((int64_t{layer} * num_blocks_ + block) * num_kv_heads_ + kv_head) * head_dim_;
}

void QuestCacheManager::store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) {
    FullCacheManager::store(layer, k, v);
    // Read the keys back from the cache: the bound must hold for what attention reads, which
    // is the stored (possibly rounded) key.
    const PagedKvCache& cache = kv().layer_cache(layer);
    const int32_t bs = cache.layout.block_size;
    const int64_t entry = cache.layout.entry_elems();
    for (const int64_t slot : step_slots()) {
        for (int64_t e = 0; e < entry; ++e) {
            key_[e] = load_float(cache.layout.dtype, cache.k_blocks, slot * entry + e);
        }
        const auto block = static_cast<int32_t>(slot / bs);
        float* lo = min_.data() + offset(layer, block, 0);
        float* hi = max_.data() + offset(layer, block, 0);
        if (slot % bs == 0) {
            std::copy(key_.begin(), key_.end(), lo);
            std::copy(key_.begin(), key_.end(), hi);
            continue;
        }
        for (int64_t e = 0; e < entry; ++e) {
            lo[e] = std::min(lo[e], key_[e]);
            hi[e] = std::max(hi[e], key_[e]);
        }
    }
}

std::span<const float> QuestCacheManager::key_min(int32_t layer, int32_t block,
                                                  int32_t kv_head) const {
    return {min_.data() + offset(layer, block, kv_head), static_cast<size_t>(head_dim_)};
}

std::span<const float> QuestCacheManager::key_max(int32_t layer, int32_t block,
                                                  int32_t kv_head) const {
    return {max_.data() + offset(layer, block, kv_head), static_cast<size_t>(head_dim_)};
}

}  // namespace se
