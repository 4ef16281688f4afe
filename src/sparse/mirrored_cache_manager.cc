#include "sparse/mirrored_cache_manager.h"

#include <algorithm>

namespace se {
namespace {

bool same_pool(const CacheCapacity& a, const CacheCapacity& b) {
    return a.num_blocks == b.num_blocks && a.block_size == b.block_size &&
           a.entries_per_token == b.entries_per_token;
}

// FNV-1a over 64-bit words.
uint64_t mix(uint64_t hash, uint64_t word) {
    for (int byte = 0; byte < 8; ++byte) {
        hash ^= (word >> (8 * byte)) & 0xffu;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

uint64_t state_digest(const CacheManager& cache, SeqId seq, int32_t num_layers) {
    uint64_t hash =
        mix(0xcbf29ce484222325ull, static_cast<uint64_t>(cache.oracle().release_gain(seq)));
    for (int32_t layer = 0; layer < num_layers; ++layer) {
        ResidentKeys keys;
        if (!cache.resident_keys(seq, layer, keys)) break;
        hash = mix(hash, keys.positions.size());
        for (int32_t p : keys.positions) hash = mix(hash, static_cast<uint64_t>(p));
    }
    return hash;
}

}  // namespace

bool MirroredCacheManager::ranks_agree_on(SeqId seq, int32_t num_layers) const {
    const uint64_t first = state_digest(*ranks_.front(), seq, num_layers);
    return std::all_of(ranks_.begin() + 1, ranks_.end(), [&](const auto& cache) {
        return state_digest(*cache, seq, num_layers) == first;
    });
}

MirroredCacheManager::MirroredCacheManager(std::vector<std::unique_ptr<CacheManager>> ranks)
    : ranks_(std::move(ranks)) {
    SE_CHECK(!ranks_.empty());
}

CacheCapacity MirroredCacheManager::capacity() const {
    CacheCapacity tightest = ranks_.front()->capacity();
    for (size_t r = 1; r < ranks_.size(); ++r) {
        const CacheCapacity other = ranks_[r]->capacity();
        SE_CHECK(same_pool(other, tightest),
                 "tensor-parallel ranks diverged: rank %zu's KV pool differs from rank 0's", r);
        tightest.num_free_blocks = std::min(tightest.num_free_blocks, other.num_free_blocks);
        tightest.num_cached_blocks = std::min(tightest.num_cached_blocks, other.num_cached_blocks);
    }
    return tightest;
}

int64_t MirroredCacheManager::TightestOracle::available_blocks() const {
    int64_t blocks = ranks_.front()->oracle().available_blocks();
    for (const auto& cache : ranks_) blocks = std::min(blocks, cache->oracle().available_blocks());
    return blocks;
}

bool MirroredCacheManager::TightestOracle::fits_alone(int64_t num_tokens) const {
    return std::all_of(ranks_.begin(), ranks_.end(),
                       [&](const auto& cache) { return cache->oracle().fits_alone(num_tokens); });
}

AdmissionCost MirroredCacheManager::TightestOracle::admission_cost(const PrefixQuery& query,
                                                                   int32_t max_chunk) const {
    AdmissionCost cost = ranks_.front()->oracle().admission_cost(query, max_chunk);
    for (size_t r = 1; r < ranks_.size(); ++r) {
        const AdmissionCost other = ranks_[r]->oracle().admission_cost(query, max_chunk);
        SE_CHECK(other.hit_tokens == cost.hit_tokens && other.first_chunk == cost.first_chunk,
                 "tensor-parallel ranks diverged: rank %zu's prefix cache differs from rank 0's",
                 r);
        cost.blocks = std::max(cost.blocks, other.blocks);
    }
    return cost;
}

int64_t MirroredCacheManager::TightestOracle::step_cost(SeqId seq, int32_t num_new_tokens) const {
    int64_t blocks = 0;
    for (const auto& cache : ranks_) {
        blocks = std::max(blocks, cache->oracle().step_cost(seq, num_new_tokens));
    }
    return blocks;
}

int64_t MirroredCacheManager::TightestOracle::release_gain(SeqId seq) const {
    int64_t blocks = ranks_.front()->oracle().release_gain(seq);
    for (const auto& cache : ranks_) blocks = std::min(blocks, cache->oracle().release_gain(seq));
    return blocks;
}

int32_t MirroredCacheManager::attach_prefix(SeqId seq, const PrefixQuery& query) {
    const int32_t hit = ranks_.front()->attach_prefix(seq, query);
    for (size_t r = 1; r < ranks_.size(); ++r) {
        const int32_t other = ranks_[r]->attach_prefix(seq, query);
        SE_CHECK(other == hit,
                 "tensor-parallel ranks diverged: rank %zu attached %d tokens, rank 0 %d", r, other,
                 hit);
    }
    return hit;
}

void MirroredCacheManager::publish_prefix(SeqId seq, const PrefixQuery& query) {
    for (auto& cache : ranks_) cache->publish_prefix(seq, query);
}

Status MirroredCacheManager::prepare_step(const StepPlan& plan) {
    const Status first = ranks_.front()->prepare_step(plan);
    for (size_t r = 1; r < ranks_.size(); ++r) {
        const Status other = ranks_[r]->prepare_step(plan);
        SE_CHECK(other.ok() == first.ok(),
                 "tensor-parallel ranks diverged: prepare_step %s on rank %zu, %s on rank 0",
                 other.ok() ? "succeeded" : "failed", r, first.ok() ? "succeeded" : "failed");
    }
    return first;
}

void MirroredCacheManager::store(int32_t, const ConstTensorView&, const ConstTensorView&) {
    SE_CHECK(false, "each rank stores its KV heads through its own cache manager (rank(r))");
}

AttentionView MirroredCacheManager::view(int32_t, const Selection&) {
    SE_CHECK(false, "each rank reads its KV heads through its own cache manager (rank(r))");
    return {};
}

std::vector<PayloadKind> MirroredCacheManager::payload_kinds() const {
    return ranks_.front()->payload_kinds();
}

void MirroredCacheManager::apply(const EvictionPlan& plan) {
    for (auto& cache : ranks_) cache->apply(plan);
}

void MirroredCacheManager::release(SeqId seq) {
    for (auto& cache : ranks_) cache->release(seq);
    capacity();  // checks that the ranks still agree
}

void MirroredCacheManager::flush_prefix_cache() {
    for (auto& cache : ranks_) cache->flush_prefix_cache();
}

RadixCacheStats MirroredCacheManager::prefix_cache_stats() const {
    return ranks_.front()->prefix_cache_stats();
}

bool MirroredCacheManager::resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const {
    return ranks_.front()->resident_keys(seq, layer, out);
}

Status MirroredCacheManager::fork_prefix(SeqId from, SeqId to, int32_t position) {
    const Status first = ranks_.front()->fork_prefix(from, to, position);
    for (size_t r = 1; r < ranks_.size(); ++r) {
        const Status other = ranks_[r]->fork_prefix(from, to, position);
        SE_CHECK(other.ok() == first.ok(),
                 "tensor-parallel ranks diverged: fork_prefix %s on rank %zu, %s on rank 0",
                 other.ok() ? "succeeded" : "failed", r, first.ok() ? "succeeded" : "failed");
    }
    return first;
}

void MirroredCacheManager::drop_positions(SeqId seq, std::span<const int32_t> positions) {
    for (auto& cache : ranks_) cache->drop_positions(seq, positions);
    capacity();
}

}  // namespace se
