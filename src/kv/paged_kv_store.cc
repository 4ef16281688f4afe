#include "kv/paged_kv_store.h"

#include <fmt/core.h>

#include <algorithm>

namespace se {

Expected<PagedKvStore> PagedKvStore::create(const PagedKvStoreOptions& options) {
    const PagedKvLayout& layout = options.layout;
    if (layout.block_size <= 0 || layout.num_kv_heads <= 0 || layout.head_dim <= 0) {
        return invalid_argument(fmt::format("KV layout: block size {}, kv heads {}, head dim {}",
                                            layout.block_size, layout.num_kv_heads,
                                            layout.head_dim));
    }
    const KvArenaShape shape{
        .num_layers = options.num_layers,
        .num_planes = 2,
        .block_bytes = dtype_row_bytes(layout.dtype, layout.block_elems()),
        .num_blocks = options.num_blocks,
    };
    SE_ASSIGN_OR_RETURN(KvArena arena, KvArena::create(shape, options.memory));
    return PagedKvStore(layout, std::move(arena), options.num_layers);
}

PagedKvStore::PagedKvStore(PagedKvLayout layout, KvArena arena, int32_t num_layers)
    : layout_(layout),
      arena_(std::move(arena)),
      pool_(static_cast<int32_t>(arena_.shape().num_blocks)) {
    layer_caches_.reserve(static_cast<size_t>(num_layers));
    for (int32_t layer = 0; layer < num_layers; ++layer) {
        layer_caches_.push_back({.layout = layout_,
                                 .k_blocks = arena_.plane(layer, 0),
                                 .v_blocks = arena_.plane(layer, 1),
                                 .num_blocks = arena_.shape().num_blocks});
    }
}

int32_t PagedKvStore::blocks_needed(SeqId seq, int32_t count) const {
    auto it = tables_.find(seq);
    const int32_t entries = it == tables_.end() ? 0 : it->second.num_entries;
    const int32_t have = it == tables_.end() ? 0 : static_cast<int32_t>(it->second.blocks.size());
    const int32_t need = (entries + count + layout_.block_size - 1) / layout_.block_size;
    return std::max(0, need - have);
}

Status PagedKvStore::reserve(std::span<const SeqId> seqs, std::span<const int32_t> counts) {
    SE_CHECK(seqs.size() == counts.size());
    int32_t total = 0;
    for (size_t i = 0; i < seqs.size(); ++i) total += blocks_needed(seqs[i], counts[i]);
    if (!pool_.can_allocate(total)) {
        return resource_exhausted(fmt::format("KV cache full: step needs {} blocks, {} of {} free",
                                              total, pool_.num_free(), pool_.num_blocks()));
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
        const int32_t need = blocks_needed(seqs[i], counts[i]);
        Status s = pool_.allocate_into(need, tables_[seqs[i]].blocks);
        SE_CHECK(s.ok(), "allocation failed after capacity check: %s", s.to_string().c_str());
    }
    return {};
}

void PagedKvStore::append(SeqId seq, int32_t count, std::vector<int64_t>& slots) {
    BlockTable& table = tables_.at(seq);
    const int32_t bs = layout_.block_size;
    SE_CHECK(table.num_entries + count <= table.capacity(bs), "append past the reserved blocks");
    for (int32_t j = table.num_entries; j < table.num_entries + count; ++j) {
        slots.push_back(table.slot(j, bs));
    }
    table.num_entries += count;
    table.num_tokens += count;
}

void PagedKvStore::attach(SeqId seq, std::span<const int32_t> blocks, int32_t num_tokens) {
    SE_CHECK(!contains(seq), "attach to a sequence that has blocks already");
    SE_CHECK(num_tokens <= static_cast<int32_t>(blocks.size()) * layout_.block_size);
    BlockTable& table = tables_[seq];
    for (int32_t b : blocks) pool_.ref(b);
    table.blocks.assign(blocks.begin(), blocks.end());
    table.num_entries = num_tokens;
    table.num_tokens = num_tokens;
}

void PagedKvStore::attach_pruned(SeqId seq, std::span<const int32_t> blocks,
                                 std::span<const int64_t> slots, std::span<const int32_t> positions,
                                 int32_t num_tokens) {
    SE_CHECK(!contains(seq), "attach to a sequence that has blocks already");
    SE_CHECK(slots.size() == positions.size());
    const int32_t bs = layout_.block_size;
    BlockTable& table = tables_[seq];
    std::unordered_map<int32_t, int32_t> index;  // block id -> its place in the table
    for (int32_t b : blocks) {
        pool_.ref(b);
        index.emplace(b, static_cast<int32_t>(table.blocks.size()));
        table.blocks.push_back(b);
    }
    for (int64_t slot : slots) {
        const int32_t at = index.at(static_cast<int32_t>(slot / bs));
        table.prefix_live.push_back(at * bs + static_cast<int32_t>(slot % bs));
    }
    SE_CHECK(std::is_sorted(table.prefix_live.begin(), table.prefix_live.end()),
             "pruned prefix entries out of order");
    table.prefix_positions.assign(positions.begin(), positions.end());
    table.holed = true;
    table.prefix_end = static_cast<int32_t>(table.blocks.size()) * bs;
    table.prefix_tokens = num_tokens;
    table.num_entries = table.prefix_end;
    table.num_tokens = num_tokens;
}

const BlockTable* PagedKvStore::table(SeqId seq) const {
    auto it = tables_.find(seq);
    return it == tables_.end() ? nullptr : &it->second;
}

bool PagedKvStore::holed(SeqId seq) const {
    const BlockTable* t = table(seq);
    return t != nullptr && t->holed;
}

void PagedKvStore::resident_entries(SeqId seq, std::vector<int32_t>& entries,
                                    std::vector<int32_t>& positions) const {
    entries.clear();
    positions.clear();
    const BlockTable* t = table(seq);
    if (t == nullptr) return;
    int32_t first_own = 0;
    int32_t first_position = 0;
    if (t->holed) {
        entries = t->prefix_live;
        positions = t->prefix_positions;
        first_own = t->prefix_end;
        first_position = t->prefix_tokens;
    }
    for (int32_t e = first_own; e < t->num_entries; ++e) {
        entries.push_back(e);
        positions.push_back(first_position + e - first_own);
    }
}

int32_t PagedKvStore::num_tokens(SeqId seq) const {
    auto it = tables_.find(seq);
    return it == tables_.end() ? 0 : it->second.num_tokens;
}

int32_t PagedKvStore::num_exclusive_blocks(SeqId seq) const {
    auto it = tables_.find(seq);
    if (it == tables_.end()) return 0;
    const auto& blocks = it->second.blocks;
    return static_cast<int32_t>(std::count_if(blocks.begin(), blocks.end(),
                                              [&](int32_t b) { return pool_.ref_count(b) == 1; }));
}

int32_t PagedKvStore::num_entries(SeqId seq) const {
    auto it = tables_.find(seq);
    return it == tables_.end() ? 0 : it->second.num_entries;
}

std::span<const int32_t> PagedKvStore::block_table(SeqId seq) const {
    auto it = tables_.find(seq);
    if (it == tables_.end()) return {};
    return it->second.blocks;
}

void PagedKvStore::release(SeqId seq) {
    auto it = tables_.find(seq);
    if (it == tables_.end()) return;
    pool_.unref_all(it->second.blocks);
    tables_.erase(it);
}

}  // namespace se
