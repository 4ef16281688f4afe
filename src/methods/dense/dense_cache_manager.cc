#include "methods/dense/dense_cache_manager.h"

namespace se {

DenseCacheManager::DenseCacheManager(Ops& ops, PagedKvStore store, bool enable_prefix_caching)
    : ops_(ops), store_(std::move(store)) {
    if (enable_prefix_caching) {
        radix_ = std::make_unique<RadixCache>(store_.pool(), store_.layout().block_size);
    }
}

CacheCapacity DenseCacheManager::capacity() const {
    return {.num_blocks = store_.pool().num_blocks(),
            .num_free_blocks = store_.pool().num_free(),
            .num_cached_blocks = radix_ ? radix_->num_cached_blocks() : 0,
            .block_size = store_.layout().block_size};
}

int32_t DenseCacheManager::usable_prefix(const PrefixQuery& query) const {
    const int32_t bs = store_.layout().block_size;
    const auto n = static_cast<int32_t>(query.tokens.size());
    return n <= 0 ? 0 : (n - 1) / bs * bs;
}

int32_t DenseCacheManager::attach_prefix(SeqId seq, const PrefixQuery& query) {
    if (!radix_) return 0;
    const RadixMatch m = radix_->match(query.ns, query.tokens, usable_prefix(query),
                                       /*count=*/true, /*touch=*/true);
    if (m.num_tokens > 0) store_.attach(seq, m.blocks, m.num_tokens);
    return m.num_tokens;
}

void DenseCacheManager::publish_prefix(SeqId seq, const PrefixQuery& query) {
    if (!radix_) return;
    const int32_t bs = store_.layout().block_size;
    const int32_t computed =
        std::min<int32_t>(store_.num_entries(seq), static_cast<int32_t>(query.tokens.size()));
    const auto blocks = store_.block_table(seq).first(static_cast<size_t>(computed / bs));
    radix_->insert(query.ns, query.tokens, blocks);
}

Status DenseCacheManager::prepare_step(const StepPlan& plan) {
    std::vector<SeqId> ids;
    std::vector<int32_t> counts;
    int64_t needed = 0;
    for (const StepSeq& s : plan.seqs) {
        SE_CHECK(store_.num_tokens(s.seq_id) == s.num_computed_tokens,
                 "dense cache holds %d tokens of a sequence with %d computed",
                 store_.num_tokens(s.seq_id), s.num_computed_tokens);
        ids.push_back(s.seq_id);
        counts.push_back(s.num_new_tokens);
        needed += store_.blocks_needed(s.seq_id, s.num_new_tokens);
    }
    const int64_t short_by = needed - store_.pool().num_free();
    if (short_by > 0 && radix_) radix_->evict(static_cast<int32_t>(short_by));
    SE_RETURN_IF_ERROR(store_.reserve(ids, counts));
    slots_.clear();
    seqs_.clear();
    int32_t q_start = 0;
    for (const StepSeq& s : plan.seqs) {
        store_.append(s.seq_id, s.num_new_tokens, slots_);
        seqs_.push_back({.q_start = q_start,
                         .q_len = s.num_new_tokens,
                         .kv_len = store_.num_entries(s.seq_id),
                         .block_table = store_.block_table(s.seq_id)});
        q_start += s.num_new_tokens;
    }
    return {};
}

void DenseCacheManager::store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) {
    ops_.store_kv(k, v, KvWrite{.slots = slots_}, store_.layer_cache(layer));
}

AttentionView DenseCacheManager::view(int32_t layer, const Selection& selection) const {
    switch (selection.kind) {
        case SelectionKind::kFull:
            break;
    }
    return {.payload = PagedKvRead{.cache = &store_.layer_cache(layer), .seqs = seqs_}};
}

void DenseCacheManager::release(SeqId seq) {
    store_.release(seq);
}

void DenseCacheManager::flush_prefix_cache() {
    if (radix_) radix_->flush();
}

RadixCacheStats DenseCacheManager::prefix_cache_stats() const {
    return radix_ ? radix_->stats() : RadixCacheStats{};
}

int64_t DenseCacheManager::available_blocks() const {
    return store_.pool().num_free() + (radix_ ? radix_->num_evictable_blocks() : 0);
}

bool DenseCacheManager::fits_alone(int64_t num_tokens) const {
    const int32_t bs = store_.layout().block_size;
    return (num_tokens + bs - 1) / bs <= store_.pool().num_blocks();
}

AdmissionCost DenseCacheManager::admission_cost(const PrefixQuery& query, int32_t max_chunk) const {
    const int32_t bs = store_.layout().block_size;
    AdmissionCost cost;
    int64_t pinned = 0;
    int64_t hit_blocks = 0;
    if (radix_) {
        const RadixMatch m = radix_->peek(query.ns, query.tokens, usable_prefix(query));
        cost.hit_tokens = m.num_tokens;
        hit_blocks = static_cast<int64_t>(m.blocks.size());
        // Cached blocks nobody uses count as available until this sequence pins them.
        pinned = radix_->count_evictable(m.blocks);
    }
    cost.first_chunk =
        std::min<int32_t>(max_chunk, static_cast<int32_t>(query.tokens.size()) - cost.hit_tokens);
    const int64_t total_blocks = (cost.hit_tokens + cost.first_chunk + bs - 1) / bs;
    cost.blocks = total_blocks - hit_blocks + pinned;
    return cost;
}

int64_t DenseCacheManager::step_cost(SeqId seq, int32_t num_new_tokens) const {
    return store_.blocks_needed(seq, num_new_tokens);
}

int64_t DenseCacheManager::release_gain(SeqId seq) const {
    int64_t gain = 0;
    for (int32_t b : store_.block_table(seq)) {
        const int32_t refs = store_.pool().ref_count(b);
        // Freed outright, or left to the prefix cache alone (evictable, hence available).
        if (refs == 1 || (refs == 2 && radix_ && radix_->holds(b))) ++gain;
    }
    return gain;
}

}  // namespace se
