#include "methods/dense/dense_cache_manager.h"

namespace se {

CacheCapacity DenseCacheManager::capacity() const {
    return {.num_blocks = store_.pool().num_blocks(),
            .num_free_blocks = store_.pool().num_free(),
            .block_size = store_.layout().block_size};
}

Status DenseCacheManager::prepare_step(const StepPlan& plan) {
    std::vector<SeqId> ids;
    std::vector<int32_t> counts;
    for (const StepSeq& s : plan.seqs) {
        SE_CHECK(store_.num_entries(s.seq_id) == s.num_computed_tokens,
                 "dense cache holds %d entries of a sequence with %d computed tokens",
                 store_.num_entries(s.seq_id), s.num_computed_tokens);
        ids.push_back(s.seq_id);
        counts.push_back(s.num_new_tokens);
    }
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

}  // namespace se
