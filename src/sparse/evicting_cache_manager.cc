#include "sparse/evicting_cache_manager.h"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

namespace se {

Expected<std::unique_ptr<EvictingCacheManager>> EvictingCacheManager::create(
    const MethodContext& context, EvictingCacheOptions options) {
    const int32_t num_layers = context.model.num_layers;
    SE_CHECK(static_cast<int32_t>(options.layer_budgets.size()) == num_layers,
             "%zu layer budgets for %d layers", options.layer_budgets.size(), num_layers);
    PagedKvLayout layout = context.kv_layout;
    int32_t num_lanes = num_layers;
    if (options.per_kv_head) {
        layout.num_kv_heads = 1;
        num_lanes = num_layers * context.kv_layout.num_kv_heads;
    }
    const int64_t bytes_per_block = 2 * dtype_row_bytes(layout.dtype, layout.block_elems());
    const int64_t num_blocks = context.kv_cache_bytes / bytes_per_block;
    if (num_blocks < num_lanes) {
        return invalid_argument(fmt::format(
            "KV cache memory of {} bytes holds {} blocks of {} bytes, fewer than the {} lanes of "
            "one sequence",
            context.kv_cache_bytes, num_blocks, bytes_per_block, num_lanes));
    }
    SE_ASSIGN_OR_RETURN(LanedKvStore kv, LanedKvStore::create({.num_lanes = num_lanes,
                                                               .layout = layout,
                                                               .num_blocks = num_blocks,
                                                               .memory = &context.ops}));
    return std::unique_ptr<EvictingCacheManager>(
        new EvictingCacheManager(context.ops, std::move(kv), std::move(options), num_layers,
                                 context.kv_layout.num_kv_heads));
}

EvictingCacheManager::EvictingCacheManager(Ops& ops, LanedKvStore kv, EvictingCacheOptions options,
                                           int32_t num_layers, int32_t num_kv_heads)
    : ops_(ops),
      kv_(std::move(kv)),
      options_(std::move(options)),
      num_layers_(num_layers),
      num_kv_heads_(num_kv_heads) {}

CacheCapacity EvictingCacheManager::capacity() const {
    return {.num_blocks = kv_.pool().num_blocks(),
            .num_free_blocks = kv_.pool().num_free(),
            .num_cached_blocks = 0,
            .block_size = kv_.layout().block_size,
            .entries_per_token = kv_.num_lanes()};
}

Status EvictingCacheManager::prepare_step(const StepPlan& plan) {
    std::vector<SeqId> ids;
    std::vector<int32_t> counts;
    for (const StepSeq& s : plan.seqs) {
        SE_CHECK(kv_.num_tokens(s.seq_id) == s.num_computed_tokens,
                 "cache holds %d tokens of a sequence with %d computed", kv_.num_tokens(s.seq_id),
                 s.num_computed_tokens);
        ids.push_back(s.seq_id);
        counts.push_back(s.num_new_tokens);
    }
    SE_RETURN_IF_ERROR(kv_.reserve(ids, counts));
    const int32_t lanes = kv_.num_lanes();
    slots_.assign(static_cast<size_t>(lanes), {});
    seqs_.assign(static_cast<size_t>(lanes), {});
    int32_t q_start = 0;
    for (const StepSeq& s : plan.seqs) {
        kv_.append(s.seq_id, s.num_new_tokens, slots_);
        auto& lane_positions = positions_[s.seq_id];
        lane_positions.resize(static_cast<size_t>(lanes));
        for (auto& p : lane_positions) {
            for (int32_t t = 0; t < s.num_new_tokens; ++t) {
                p.push_back(s.num_computed_tokens + t);
            }
        }
        for (int32_t lane = 0; lane < lanes; ++lane) {
            seqs_[lane].push_back({.q_start = q_start,
                                   .q_len = s.num_new_tokens,
                                   .kv_len = kv_.num_entries(s.seq_id, lane),
                                   .block_table = kv_.block_table(s.seq_id, lane)});
        }
        if (options_.entry_scores) {
            auto& lanes_scores = scores_[s.seq_id];
            lanes_scores.resize(static_cast<size_t>(lanes));
            for (int32_t lane = 0; lane < lanes; ++lane) {
                lanes_scores[lane].resize(static_cast<size_t>(kv_.num_entries(s.seq_id, lane)),
                                          0.0f);
            }
        }
        q_start += s.num_new_tokens;
    }
    if (options_.per_kv_head) {
        head_reads_.assign(static_cast<size_t>(num_layers_), {});
        for (int32_t layer = 0; layer < num_layers_; ++layer) {
            for (int32_t g = 0; g < num_kv_heads_; ++g) {
                head_reads_[layer].push_back(
                    {.cache = &kv_.cache(), .seqs = seqs_[lane(layer, g)]});
            }
        }
    }
    return {};
}

void EvictingCacheManager::store(int32_t layer, const ConstTensorView& k,
                                 const ConstTensorView& v) {
    if (!options_.per_kv_head) {
        ops_.store_kv(k, v, KvWrite{.slots = slots_[lane(layer)]}, kv_.cache());
        return;
    }
    const int32_t d = kv_.layout().head_dim;
    head_k_.resize(static_cast<size_t>(k.rows * d));
    head_v_.resize(static_cast<size_t>(k.rows * d));
    for (int32_t g = 0; g < num_kv_heads_; ++g) {
        for (int64_t t = 0; t < k.rows; ++t) {
            const float* ks = k.f32() + t * k.cols + int64_t{g} * d;
            const float* vs = v.f32() + t * v.cols + int64_t{g} * d;
            std::copy(ks, ks + d, head_k_.data() + t * d);
            std::copy(vs, vs + d, head_v_.data() + t * d);
        }
        ops_.store_kv(ConstTensorView(DType::kF32, head_k_.data(), k.rows, d),
                      ConstTensorView(DType::kF32, head_v_.data(), v.rows, d),
                      KvWrite{.slots = slots_[lane(layer, g)]}, kv_.cache());
    }
}

std::optional<PlainKvStore> EvictingCacheManager::plain_store(int32_t layer) const {
    if (options_.per_kv_head) return std::nullopt;
    return PlainKvStore{.write = KvWrite{.slots = slots_[lane(layer)]}, .cache = &kv_.cache()};
}

AttentionView EvictingCacheManager::view(int32_t layer, const Selection& selection) {
    if (options_.per_kv_head) {
        SE_CHECK(selection.kind == SelectionKind::kFull,
                 "per-head lanes are read in full (their compaction is the selection)");
        return {.payload = PerHeadPagedRead{.heads = head_reads_.at(layer)}};
    }
    const std::vector<PagedSeq>& seqs = seqs_.at(lane(layer));
    switch (selection.kind) {
        case SelectionKind::kFull:
            break;
        case SelectionKind::kEntries:
            return {.payload = views_.gather(kv_.cache(), seqs, selection)};
        case SelectionKind::kPages:
            return {.payload = views_.pages(kv_.cache(), seqs, selection)};
    }
    return {.payload = PagedKvRead{.cache = &kv_.cache(), .seqs = seqs}};
}

std::vector<PayloadKind> EvictingCacheManager::payload_kinds() const {
    if (options_.per_kv_head) return {PayloadKind::kPagedPerHead};
    return {PayloadKind::kPagedDense, PayloadKind::kPagedGather};
}

void EvictingCacheManager::apply(const EvictionPlan& plan) {
    for (const Compaction& c : plan.compactions) {
        const EntryMoves moves = kv_.compact(c.seq, c.lane, c.keep);
        ops_.move_kv(kv_.cache(), moves.from, moves.to);
        std::vector<int32_t>& positions = positions_.at(c.seq).at(c.lane);
        for (size_t i = 0; i < c.keep.size(); ++i) positions[i] = positions[c.keep[i]];
        positions.resize(c.keep.size());
        if (!options_.entry_scores) continue;
        std::vector<float>& scores = scores_.at(c.seq).at(c.lane);
        for (size_t i = 0; i < c.keep.size(); ++i) scores[i] = scores[c.keep[i]];
        scores.resize(c.keep.size());
    }
    if (!plan.empty()) seqs_.clear();  // the step's tables moved; the next step rebuilds them
}

std::span<const int32_t> EvictingCacheManager::entry_positions(SeqId seq, int32_t lane) const {
    auto it = positions_.find(seq);
    if (it == positions_.end()) return {};
    return it->second.at(lane);
}

std::span<float> EvictingCacheManager::entry_scores(SeqId seq, int32_t lane) {
    SE_CHECK(options_.entry_scores, "this cache keeps no entry scores");
    return scores_.at(seq).at(lane);
}

void EvictingCacheManager::release(SeqId seq) {
    kv_.release(seq);
    scores_.erase(seq);
    positions_.erase(seq);
}

int64_t EvictingCacheManager::blocks_for(int64_t entries) const {
    const int32_t bs = kv_.layout().block_size;
    return (entries + bs - 1) / bs;
}

int64_t EvictingCacheManager::available_blocks() const {
    return kv_.pool().num_free();
}

bool EvictingCacheManager::fits_alone(int64_t num_tokens) const {
    int64_t blocks = 0;
    for (int32_t layer = 0; layer < num_layers_; ++layer) {
        const int64_t peak =
            options_.bounded_decode
                ? std::min<int64_t>(
                      num_tokens, int64_t{options_.layer_budgets[layer]} + options_.max_step_tokens)
                : num_tokens;
        blocks += blocks_for(peak) * (options_.per_kv_head ? num_kv_heads_ : 1);
    }
    return blocks <= kv_.pool().num_blocks();
}

AdmissionCost EvictingCacheManager::admission_cost(const PrefixQuery& query,
                                                   int32_t max_chunk) const {
    AdmissionCost cost;
    cost.first_chunk = std::min<int32_t>(max_chunk, static_cast<int32_t>(query.tokens.size()));
    cost.blocks = blocks_for(cost.first_chunk) * kv_.num_lanes();
    return cost;
}

int64_t EvictingCacheManager::step_cost(SeqId seq, int32_t num_new_tokens) const {
    return kv_.blocks_needed(seq, num_new_tokens);
}

int64_t EvictingCacheManager::release_gain(SeqId seq) const {
    return kv_.num_blocks_held(seq);
}

}  // namespace se

namespace se {

bool EvictingCacheManager::resident_keys(SeqId seq, int32_t layer, ResidentKeys& out) const {
    if (options_.per_kv_head || !kv_.contains(seq)) return false;
    out.cache = &kv_.cache();
    out.block_table = kv_.block_table(seq, layer);
    out.num_entries = kv_.num_entries(seq, layer);
    out.entries.resize(static_cast<size_t>(out.num_entries));
    std::iota(out.entries.begin(), out.entries.end(), 0);
    const auto positions = entry_positions(seq, layer);
    out.positions.assign(positions.begin(), positions.end());
    return true;
}

Status EvictingCacheManager::fork_prefix(SeqId from, SeqId to, int32_t position) {
    const auto& from_positions = positions_.at(from);
    std::vector<int32_t> counts;
    for (const std::vector<int32_t>& p : from_positions) {
        counts.push_back(
            static_cast<int32_t>(std::lower_bound(p.begin(), p.end(), position) - p.begin()));
    }
    SE_ASSIGN_OR_RETURN(const EntryMoves moves, kv_.fork(from, to, counts, position));
    ops_.move_kv(kv_.cache(), moves.from, moves.to);
    auto& to_positions = positions_[to];
    to_positions.resize(from_positions.size());
    for (size_t lane = 0; lane < counts.size(); ++lane) {
        to_positions[lane].assign(from_positions[lane].begin(),
                                  from_positions[lane].begin() + counts[lane]);
    }
    if (options_.entry_scores) {
        const auto& from_scores = scores_.at(from);
        auto& to_scores = scores_[to];
        to_scores.resize(from_scores.size());
        for (size_t lane = 0; lane < counts.size(); ++lane) {
            to_scores[lane].assign(from_scores[lane].begin(),
                                   from_scores[lane].begin() + counts[lane]);
        }
    }
    return {};
}

void EvictingCacheManager::drop_positions(SeqId seq, std::span<const int32_t> positions) {
    EvictionPlan plan;
    const auto& lanes = positions_.at(seq);
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
        Compaction c{.seq = seq, .lane = static_cast<int32_t>(lane), .keep = {}};
        for (size_t i = 0; i < lanes[lane].size(); ++i) {
            if (!std::binary_search(positions.begin(), positions.end(), lanes[lane][i])) {
                c.keep.push_back(static_cast<int32_t>(i));
            }
        }
        if (c.keep.size() < lanes[lane].size()) plan.compactions.push_back(std::move(c));
    }
    apply(plan);
}

}  // namespace se
