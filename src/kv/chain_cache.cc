#include "kv/chain_cache.h"

#include <fmt/core.h>
#include <xxhash.h>

#include "core/check.h"

namespace se {
namespace {

// Ids remembered as gone; the oldest are forgotten past this many.
constexpr size_t kMaxGoneIds = 65536;

}  // namespace

std::string_view chain_status_name(ChainStatus status) {
    switch (status) {
        case ChainStatus::kCreated:
            return "created";
        case ChainStatus::kResumed:
            return "resumed";
        case ChainStatus::kInvalidated:
            return "invalidated";
    }
    return "unknown";
}

ChainCache::ChainCache(ChainLimits limits, int64_t pool_blocks)
    : limits_(limits), pool_blocks_(pool_blocks) {}

ChainCache::Digest ChainCache::digest_of(std::span<const int32_t> tokens) {
    const XXH128_hash_t h = XXH3_128bits(tokens.data(), tokens.size_bytes());
    return {.low = h.low64, .high = h.high64};
}

Expected<const ChainCache::Record*> ChainCache::idle_record(const std::string& id) const {
    if (gone_.count(id) != 0) return gone(fmt::format("chain '{}' was reclaimed", id));
    auto it = records_.find(id);
    if (it == records_.end()) return not_found(fmt::format("no chain '{}'", id));
    if (it->second.state == State::kActive) {
        return failed_precondition(
            fmt::format("chain '{}' is busy: a request on it is still running", id));
    }
    return &it->second;
}

Expected<std::vector<int32_t>> ChainCache::transcript(const std::string& id) const {
    SE_ASSIGN_OR_RETURN(const Record* r, idle_record(id));
    return r->transcript;
}

Expected<IdleChain> ChainCache::idle(const std::string& id,
                                     std::span<const int32_t> history) const {
    SE_ASSIGN_OR_RETURN(const Record* record, idle_record(id));
    const Record& r = *record;
    if (history.size() < static_cast<size_t>(r.processed) ||
        !(digest_of(history.first(static_cast<size_t>(r.processed))) == r.digest)) {
        return invalid_argument(
            fmt::format("chain '{}': the token ids do not begin with the {} tokens it processed",
                        id, r.processed));
    }
    return IdleChain{.owner = r.owner, .processed = r.processed};
}

void ChainCache::resize(const std::string& id, int64_t blocks) {
    Record& r = records_.at(id);
    SE_CHECK(r.state == State::kIdle, "resizing a busy chain");
    r.blocks = blocks;
}

Expected<ChainStart> ChainCache::begin(const std::string& id, uint64_t fingerprint,
                                       std::span<const int32_t> prompt, SeqId new_seq) {
    if (gone_.count(id) != 0) {
        return gone(fmt::format("chain '{}' was reclaimed to free memory; start a new chain", id));
    }
    auto it = records_.find(id);
    if (it == records_.end()) {
        records_.emplace(id, Record{.owner = new_seq, .fingerprint = fingerprint});
        return ChainStart{.status = ChainStatus::kCreated, .seq = new_seq};
    }
    Record& r = it->second;
    if (r.state == State::kActive) {
        return failed_precondition(
            fmt::format("chain '{}' is busy: another request on it is still running", id));
    }
    const bool matches = r.fingerprint == fingerprint &&
                         prompt.size() > static_cast<size_t>(r.processed) &&
                         digest_of(prompt.first(static_cast<size_t>(r.processed))) == r.digest;
    if (!matches) {
        const SeqId old = r.owner;
        r = Record{.owner = new_seq, .fingerprint = fingerprint};
        ++num_invalidated_;
        return ChainStart{.status = ChainStatus::kInvalidated, .seq = new_seq, .release = old};
    }
    r.state = State::kActive;
    r.blocks = 0;
    ++num_resumed_;
    return ChainStart{
        .status = ChainStatus::kResumed, .seq = r.owner, .reused_tokens = r.processed};
}

bool ChainCache::owns(const std::string& id, SeqId seq) const {
    auto it = records_.find(id);
    return it != records_.end() && it->second.state == State::kActive && it->second.owner == seq;
}

std::vector<SeqId> ChainCache::park(const std::string& id, std::span<const int32_t> processed,
                                    int64_t blocks, int64_t now,
                                    std::span<const int32_t> transcript) {
    Record& r = records_.at(id);
    SE_CHECK(r.state == State::kActive, "chain '%s' parked twice", id.c_str());
    r.state = State::kIdle;
    r.processed = static_cast<int32_t>(processed.size());
    r.digest = digest_of(processed);
    r.transcript.assign(transcript.begin(), transcript.end());
    r.last_use = now;
    r.blocks = blocks;
    std::vector<SeqId> reclaimed;
    while (over_limits()) {
        std::optional<SeqId> owner = reclaim_lru();
        SE_CHECK(owner.has_value(), "over the chain limits with nothing idle");
        reclaimed.push_back(*owner);
    }
    return reclaimed;
}

bool ChainCache::over_limits() const {
    const ChainCacheStats s = stats();
    if (limits_.max_idle_chains >= 0 && s.num_idle > limits_.max_idle_chains) return true;
    return static_cast<double>(s.idle_blocks) >
           limits_.max_idle_pool_fraction * static_cast<double>(pool_blocks_);
}

void ChainCache::invalidate(const std::string& id) {
    auto it = records_.find(id);
    if (it == records_.end()) return;
    if (!it->second.lost) ++num_invalidated_;
    records_.erase(it);
}

void ChainCache::mark_lost(const std::string& id) {
    auto it = records_.find(id);
    if (it != records_.end() && !it->second.lost) {
        it->second.lost = true;
        ++num_invalidated_;
    }
}

bool ChainCache::lost(const std::string& id) const {
    auto it = records_.find(id);
    return it != records_.end() && it->second.lost;
}

std::optional<SeqId> ChainCache::reclaim_lru() {
    auto lru = records_.end();
    for (auto it = records_.begin(); it != records_.end(); ++it) {
        if (it->second.state != State::kIdle) continue;
        // records_ is ordered by id, so the first of equal last uses has the lower id.
        if (lru == records_.end() || it->second.last_use < lru->second.last_use) lru = it;
    }
    if (lru == records_.end()) return std::nullopt;
    const SeqId owner = lru->second.owner;
    remember_gone(lru->first);
    records_.erase(lru);
    ++num_reclaimed_;
    return owner;
}

void ChainCache::remember_gone(const std::string& id) {
    if (!gone_.insert(id).second) return;
    gone_order_.push_back(id);
    if (gone_order_.size() > kMaxGoneIds) {
        gone_.erase(gone_order_.front());
        gone_order_.pop_front();
    }
}

Expected<SeqId> ChainCache::drop(const std::string& id) {
    auto it = records_.find(id);
    if (it == records_.end()) return not_found(fmt::format("no chain '{}'", id));
    if (it->second.state == State::kActive) {
        return failed_precondition(
            fmt::format("chain '{}' is busy: a request on it is still running", id));
    }
    const SeqId owner = it->second.owner;
    records_.erase(it);
    return owner;
}

std::vector<SeqId> ChainCache::idle_owners() const {
    std::vector<SeqId> owners;
    for (const auto& [id, r] : records_) {
        if (r.state == State::kIdle) owners.push_back(r.owner);
    }
    return owners;
}

ChainCacheStats ChainCache::stats() const {
    ChainCacheStats s{.num_resumed = num_resumed_,
                      .num_invalidated = num_invalidated_,
                      .num_reclaimed = num_reclaimed_};
    for (const auto& [id, r] : records_) {
        if (r.state == State::kIdle) {
            ++s.num_idle;
            s.idle_blocks += r.blocks;
        } else {
            ++s.num_active;
        }
    }
    return s;
}

}  // namespace se
