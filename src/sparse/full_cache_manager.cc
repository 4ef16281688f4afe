#include "sparse/full_cache_manager.h"

#include <fmt/core.h>

#include <algorithm>

namespace se {

Expected<PagedKvStore> make_full_kv_store(const MethodContext& context,
                                          int64_t extra_bytes_per_block) {
    const int64_t bytes_per_block =
        int64_t{context.model.num_layers} * 2 *
            dtype_row_bytes(context.kv_layout.dtype, context.kv_layout.block_elems()) +
        extra_bytes_per_block;
    const int64_t num_blocks = context.kv_cache_bytes / bytes_per_block;
    if (num_blocks < 1) {
        return invalid_argument(fmt::format(
            "KV cache memory of {} bytes holds no block; one block of {} tokens takes {} bytes",
            context.kv_cache_bytes, context.kv_layout.block_size, bytes_per_block));
    }
    return PagedKvStore::create({.num_layers = context.model.num_layers,
                                 .layout = context.kv_layout,
                                 .num_blocks = num_blocks,
                                 .memory = &context.ops});
}

FullCacheManager::FullCacheManager(Ops& ops, PagedKvStore store, FullCacheOptions options)
    : ops_(ops), store_(std::move(store)), options_(options) {
    if (options.enable_prefix_caching) {
        radix_ = std::make_unique<RadixCache>(store_.pool(), store_.layout().block_size);
    }
}

CacheCapacity FullCacheManager::capacity() const {
    return {.num_blocks = store_.pool().num_blocks(),
            .num_free_blocks = store_.pool().num_free(),
            .num_cached_blocks = radix_ ? radix_->num_cached_blocks() : 0,
            .block_size = store_.layout().block_size};
}

int32_t FullCacheManager::usable_prefix(const PrefixQuery& query) const {
    const int32_t bs = store_.layout().block_size;
    const auto n = static_cast<int32_t>(query.tokens.size());
    return n <= 0 ? 0 : (n - 1) / bs * bs;
}

int32_t FullCacheManager::attach_prefix(SeqId seq, const PrefixQuery& query) {
    if (!radix_) return 0;
    const RadixMatch m = radix_->match(query.ns, query.tokens, usable_prefix(query),
                                       /*count=*/true, /*touch=*/true);
    attach_match(seq, m);
    return m.num_tokens;
}

void FullCacheManager::attach_match(SeqId seq, const RadixMatch& m) {
    if (m.num_tokens == 0) return;
    if (m.pruned) {
        store_.attach_pruned(seq, m.blocks, m.slots, m.positions, m.num_tokens);
    } else {
        store_.attach(seq, m.blocks, m.num_tokens);
    }
}

int32_t FullCacheManager::attach_cached(SeqId seq, uint64_t ns, std::span<const int32_t> tokens) {
    if (!radix_) return 0;
    const RadixMatch m = radix_->match(ns, tokens, static_cast<int32_t>(tokens.size()),
                                       /*count=*/false, /*touch=*/false);
    attach_match(seq, m);
    return m.num_tokens;
}

void FullCacheManager::publish_prefix(SeqId seq, const PrefixQuery& query) {
    if (!radix_) return;
    const int32_t bs = store_.layout().block_size;
    const BlockTable* table = store_.table(seq);
    if (table == nullptr) return;
    const int32_t computed =
        std::min<int32_t>(table->num_tokens, static_cast<int32_t>(query.tokens.size()));
    // A sequence on a pruned prefix publishes only its own blocks, after the prefix's nodes.
    const int32_t first_block = table->holed ? table->prefix_tokens / bs : 0;
    const int32_t first_own = table->holed ? table->prefix_end / bs : 0;
    const int32_t count = computed / bs - first_block;
    if (count <= 0) return;
    const auto blocks = std::span<const int32_t>(table->blocks)
                            .subspan(static_cast<size_t>(first_own), static_cast<size_t>(count));
    radix_->insert(query.ns, query.tokens, blocks, first_block);
}

Status FullCacheManager::prepare_step(const StepPlan& plan) {
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
    resident_.clear();
    const bool holed = std::any_of(plan.seqs.begin(), plan.seqs.end(),
                                   [&](const StepSeq& s) { return store_.holed(s.seq_id); });
    int32_t q_start = 0;
    for (const StepSeq& s : plan.seqs) {
        store_.append(s.seq_id, s.num_new_tokens, slots_);
        if (holed) {
            resident_.emplace_back();
            store_.resident_entries(s.seq_id, resident_.back(), positions_scratch_);
        }
        seqs_.push_back({.q_start = q_start,
                         .q_len = s.num_new_tokens,
                         .kv_len = store_.num_entries(s.seq_id),
                         .block_table = store_.block_table(s.seq_id)});
        q_start += s.num_new_tokens;
    }
    return {};
}

void FullCacheManager::store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) {
    ops_.store_kv(k, v, KvWrite{.slots = slots_}, store_.layer_cache(layer));
}

std::optional<PlainKvStore> FullCacheManager::plain_store(int32_t layer) const {
    return PlainKvStore{.write = KvWrite{.slots = slots_}, .cache = &store_.layer_cache(layer)};
}

AttentionView FullCacheManager::view(int32_t layer, const Selection& selection) {
    const PagedKvCache& cache = store_.layer_cache(layer);
    SE_CHECK(resident_.empty() || selection.kind == SelectionKind::kFull,
             "a sparse selection over a pruned prefix");
    switch (selection.kind) {
        case SelectionKind::kFull:
            // A pruned prefix has holes: read its resident entries by list.
            if (!resident_.empty()) return {.payload = views_.listed(cache, seqs_, resident_)};
            break;
        case SelectionKind::kEntries:
            return {.payload = views_.gather(cache, seqs_, selection)};
        case SelectionKind::kPages:
            return {.payload = views_.pages(cache, seqs_, selection)};
    }
    return {.payload = PagedKvRead{.cache = &cache, .seqs = seqs_}};
}

std::vector<PayloadKind> FullCacheManager::payload_kinds() const {
    if (options_.full_selections_only && !options_.allow_pruning) return {PayloadKind::kPagedDense};
    return {PayloadKind::kPagedDense, PayloadKind::kPagedGather};
}

bool FullCacheManager::resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const {
    const BlockTable* table = store_.table(seq);
    if (table == nullptr) return false;
    out.cache = &store_.layer_cache(layer);
    out.block_table = table->blocks;
    out.num_entries = table->num_entries;
    store_.resident_entries(seq, out.entries, out.positions);
    return true;
}

void FullCacheManager::release(SeqId seq) {
    store_.release(seq);
}

void FullCacheManager::flush_prefix_cache() {
    if (radix_) radix_->flush();
}

RadixCacheStats FullCacheManager::prefix_cache_stats() const {
    return radix_ ? radix_->stats() : RadixCacheStats{};
}

int64_t FullCacheManager::available_blocks() const {
    return store_.pool().num_free() + (radix_ ? radix_->num_evictable_blocks() : 0);
}

bool FullCacheManager::fits_alone(int64_t num_tokens) const {
    const int32_t bs = store_.layout().block_size;
    return (num_tokens + bs - 1) / bs <= store_.pool().num_blocks();
}

AdmissionCost FullCacheManager::admission_cost(const PrefixQuery& query, int32_t max_chunk) const {
    const int32_t bs = store_.layout().block_size;
    AdmissionCost cost;
    int64_t pinned = 0;
    if (radix_) {
        const RadixMatch m = radix_->peek(query.ns, query.tokens, usable_prefix(query));
        cost.hit_tokens = m.num_tokens;
        // Cached blocks nobody uses count as available until this sequence pins them.
        pinned = radix_->count_evictable(m.blocks);
    }
    cost.first_chunk =
        std::min<int32_t>(max_chunk, static_cast<int32_t>(query.tokens.size()) - cost.hit_tokens);
    // The hit is whole blocks (or a pruned prefix), so new tokens start a fresh block.
    cost.blocks = (cost.first_chunk + bs - 1) / bs + pinned;
    return cost;
}

int64_t FullCacheManager::step_cost(SeqId seq, int32_t num_new_tokens) const {
    return store_.blocks_needed(seq, num_new_tokens);
}

int64_t FullCacheManager::release_gain(SeqId seq) const {
    int64_t gain = 0;
    for (int32_t b : store_.block_table(seq)) {
        const int32_t refs = store_.pool().ref_count(b);
        // Freed outright, or left to the prefix cache alone (evictable, hence available).
        if (refs == 1 || (refs == 2 && radix_ && radix_->holds(b))) ++gain;
    }
    return gain;
}

}  // namespace se
