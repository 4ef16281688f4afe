#include "kv/laned_kv_store.h"

#include <fmt/core.h>

#include <algorithm>

namespace se {

Expected<LanedKvStore> LanedKvStore::create(const LanedKvStoreOptions& options) {
    const PagedKvLayout& layout = options.layout;
    if (options.num_lanes <= 0 || layout.block_size <= 0 || layout.num_kv_heads <= 0 ||
        layout.head_dim <= 0) {
        return invalid_argument(fmt::format(
            "KV layout: {} lanes, block size {}, kv heads {}, head dim {}", options.num_lanes,
            layout.block_size, layout.num_kv_heads, layout.head_dim));
    }
    const KvArenaShape shape{.num_layers = 1,
                             .num_planes = 2,
                             .block_bytes = dtype_row_bytes(layout.dtype, layout.block_elems()),
                             .num_blocks = options.num_blocks};
    SE_ASSIGN_OR_RETURN(KvArena arena, KvArena::create(shape, options.memory));
    return LanedKvStore(options.num_lanes, layout, std::move(arena));
}

LanedKvStore::LanedKvStore(int32_t num_lanes, PagedKvLayout layout, KvArena arena)
    : num_lanes_(num_lanes),
      arena_(std::move(arena)),
      pool_(static_cast<int32_t>(arena_.shape().num_blocks)) {
    cache_ = {.layout = layout,
              .k_blocks = arena_.plane(0, 0),
              .v_blocks = arena_.plane(0, 1),
              .num_blocks = arena_.shape().num_blocks};
}

int32_t LanedKvStore::lane_blocks_needed(const BlockTable& table, int32_t count) const {
    const int32_t bs = cache_.layout.block_size;
    const int32_t need = (table.num_entries + count + bs - 1) / bs;
    return std::max(0, need - static_cast<int32_t>(table.blocks.size()));
}

int32_t LanedKvStore::blocks_needed(SeqId seq, int32_t count) const {
    auto it = tables_.find(seq);
    if (it == tables_.end()) {
        const int32_t bs = cache_.layout.block_size;
        return num_lanes_ * ((count + bs - 1) / bs);
    }
    int32_t total = 0;
    for (const BlockTable& t : it->second) total += lane_blocks_needed(t, count);
    return total;
}

Status LanedKvStore::reserve(std::span<const SeqId> seqs, std::span<const int32_t> counts) {
    SE_CHECK(seqs.size() == counts.size());
    int32_t total = 0;
    for (size_t i = 0; i < seqs.size(); ++i) total += blocks_needed(seqs[i], counts[i]);
    if (!pool_.can_allocate(total)) {
        return resource_exhausted(fmt::format("KV cache full: step needs {} blocks, {} of {} free",
                                              total, pool_.num_free(), pool_.num_blocks()));
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
        auto& lanes = tables_[seqs[i]];
        lanes.resize(static_cast<size_t>(num_lanes_));
        for (BlockTable& t : lanes) {
            Status s = pool_.allocate_into(lane_blocks_needed(t, counts[i]), t.blocks);
            SE_CHECK(s.ok(), "allocation failed after capacity check: %s", s.to_string().c_str());
        }
    }
    return {};
}

void LanedKvStore::append(SeqId seq, int32_t count, std::vector<std::vector<int64_t>>& slots) {
    auto& lanes = tables_.at(seq);
    const int32_t bs = cache_.layout.block_size;
    slots.resize(static_cast<size_t>(num_lanes_));
    for (int32_t lane = 0; lane < num_lanes_; ++lane) {
        BlockTable& t = lanes[lane];
        SE_CHECK(t.num_entries + count <= t.capacity(bs), "append past the reserved blocks");
        for (int32_t j = t.num_entries; j < t.num_entries + count; ++j) {
            slots[lane].push_back(t.slot(j, bs));
        }
        t.num_entries += count;
        t.num_tokens += count;
    }
}

Expected<EntryMoves> LanedKvStore::fork(SeqId from, SeqId to, std::span<const int32_t> counts,
                                        int32_t num_tokens) {
    SE_CHECK(!contains(to) && static_cast<int32_t>(counts.size()) == num_lanes_);
    const std::vector<BlockTable>& source = tables_.at(from);
    const int32_t bs = cache_.layout.block_size;
    int32_t needed = 0;
    for (int32_t lane = 0; lane < num_lanes_; ++lane) {
        SE_CHECK(counts[lane] >= 0 && counts[lane] <= source[lane].num_entries);
        needed += (counts[lane] + bs - 1) / bs;
    }
    if (!pool_.can_allocate(needed)) {
        return resource_exhausted(
            fmt::format("a copy of the state needs {} blocks, {} free", needed, pool_.num_free()));
    }
    std::vector<BlockTable> copy(static_cast<size_t>(num_lanes_));
    EntryMoves moves;
    for (int32_t lane = 0; lane < num_lanes_; ++lane) {
        BlockTable& t = copy[lane];
        Status s = pool_.allocate_into((counts[lane] + bs - 1) / bs, t.blocks);
        SE_CHECK(s.ok(), "allocation failed after capacity check");
        t.num_entries = counts[lane];
        t.num_tokens = num_tokens;
        for (int32_t e = 0; e < counts[lane]; ++e) {
            moves.from.push_back(source[lane].slot(e, bs));
            moves.to.push_back(t.slot(e, bs));
        }
    }
    tables_.emplace(to, std::move(copy));
    return moves;
}

EntryMoves LanedKvStore::compact(SeqId seq, int32_t lane, std::span<const int32_t> keep) {
    BlockTable& t = tables_.at(seq).at(lane);
    const int32_t bs = cache_.layout.block_size;
    EntryMoves moves;
    int32_t prev = -1;
    for (size_t i = 0; i < keep.size(); ++i) {
        const int32_t e = keep[i];
        SE_CHECK(e > prev && e < t.num_entries,
                 "compaction keeps entry %d after %d of %d resident (ascending, resident only)", e,
                 prev, t.num_entries);
        prev = e;
        if (e != static_cast<int32_t>(i)) {
            moves.from.push_back(t.slot(e, bs));
            moves.to.push_back(t.slot(static_cast<int32_t>(i), bs));
        }
    }
    t.num_entries = static_cast<int32_t>(keep.size());
    const auto blocks_kept = static_cast<size_t>((t.num_entries + bs - 1) / bs);
    if (t.blocks.size() > blocks_kept) {
        pool_.unref_all(std::span<const int32_t>(t.blocks).subspan(blocks_kept));
        t.blocks.resize(blocks_kept);
    }
    return moves;
}

int32_t LanedKvStore::num_tokens(SeqId seq) const {
    auto it = tables_.find(seq);
    return it == tables_.end() || it->second.empty() ? 0 : it->second.front().num_tokens;
}

int32_t LanedKvStore::num_entries(SeqId seq, int32_t lane) const {
    auto it = tables_.find(seq);
    return it == tables_.end() ? 0 : it->second.at(lane).num_entries;
}

std::span<const int32_t> LanedKvStore::block_table(SeqId seq, int32_t lane) const {
    auto it = tables_.find(seq);
    if (it == tables_.end()) return {};
    return it->second.at(lane).blocks;
}

int32_t LanedKvStore::num_blocks_held(SeqId seq) const {
    auto it = tables_.find(seq);
    if (it == tables_.end()) return 0;
    int32_t total = 0;
    for (const BlockTable& t : it->second) total += static_cast<int32_t>(t.blocks.size());
    return total;
}

void LanedKvStore::release(SeqId seq) {
    auto it = tables_.find(seq);
    if (it == tables_.end()) return;
    for (const BlockTable& t : it->second) pool_.unref_all(t.blocks);
    tables_.erase(it);
}

}  // namespace se
