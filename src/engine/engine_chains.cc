// The engine's Chain Cache steps: start a request on a chain, park its state when it finishes,
// drop it when the owner is preempted, cancelled or fails, and reclaim idle chains under memory
// pressure (least recently used first, before any running request is preempted).
#include <fmt/core.h>

#include "core/logging.h"
#include "engine/engine.h"
#include "sparse/mirrored_cache_manager.h"

namespace se {

Status Engine::init_chains() {
    const ChainLimits& limits = config_.chain_cache;
    if (limits.max_idle_pool_fraction <= 0.0 || limits.max_idle_pool_fraction > 1.0) {
        return invalid_argument(
            fmt::format("--chain-cache-capacity: a fraction of the pool must be in (0, 1], got {}",
                        limits.max_idle_pool_fraction));
    }
    chains_ = std::make_unique<ChainCache>(limits, method_.cache->capacity().num_blocks);
    oracle_ = std::make_unique<ChainAwareOracle>(method_.cache->oracle(), *chains_);
    return {};
}

Expected<ChainStart> Engine::begin_chain(const std::string& id, uint64_t fingerprint,
                                         std::span<const int32_t> prompt, SeqId new_seq) {
    if (!method_.cache->supports_chains()) {
        return invalid_argument(fmt::format(
            "chain_id: method '{}' keeps the whole history, which the prefix cache reuses; "
            "chains are for methods that evict",
            config_.sparse_method.empty() ? "dense" : config_.sparse_method));
    }
    SE_ASSIGN_OR_RETURN(ChainStart start, chains_->begin(id, fingerprint, prompt, new_seq));
    if (start.release) method_.cache->release(*start.release);
    return start;
}

bool Engine::park_chain(const Sequence& seq) {
    const std::string id(seq.chain_id());
    if (id.empty() || !chains_->owns(id, seq.seq_id())) return false;
    if (*seq.output().finish_reason == FinishReason::kAbort || seq.num_computed_tokens() == 0 ||
        chains_->lost(id)) {
        chains_->invalidate(id);
        return false;
    }
    // Every rank must hold the same state for the chain; one that does not is not resumed.
    const auto* ranks = dynamic_cast<const MirroredCacheManager*>(method_.cache.get());
    if (ranks != nullptr && !ranks->ranks_agree_on(seq.seq_id(), loaded_.config.num_layers)) {
        log_warn("chain {}: the tensor-parallel ranks retained different state; not kept", id);
        chains_->invalidate(id);
        return false;
    }
    const int64_t blocks = method_.cache->oracle().release_gain(seq.seq_id());
    const auto processed =
        std::span(seq.tokens()).first(static_cast<size_t>(seq.num_computed_tokens()));
    for (SeqId owner : chains_->park(id, processed, blocks, stats_.num_steps, seq.tokens())) {
        method_.cache->release(owner);
    }
    return true;
}

void Engine::drop_chain_of(Sequence& seq) {
    const std::string id(seq.chain_id());
    if (id.empty() || !chains_->owns(id, seq.seq_id())) return;
    chains_->mark_lost(id);
    seq.invalidate_chain();
}

void Engine::reclaim_idle_chains(int64_t blocks_needed) {
    while (method_.cache->oracle().available_blocks() < blocks_needed) {
        std::optional<SeqId> owner = chains_->reclaim_lru();
        if (!owner) return;
        method_.cache->release(*owner);
    }
}

Expected<std::vector<int32_t>> Engine::chain_transcript(const std::string& id) const {
    return chains_->transcript(id);
}

Status Engine::release_chain(const std::string& id) {
    SE_ASSIGN_OR_RETURN(const SeqId owner, chains_->drop(id));
    method_.cache->release(owner);
    refresh_gauges();
    return {};
}

}  // namespace se
