// RadixCache operations on a named prefix: inspect, delete a subtree, set eviction priorities,
// and the two steps prefix pruning takes (find the path, replace its payload by a segment).
#include <fmt/core.h>

#include "core/check.h"
#include "kv/radix_cache.h"

namespace se {

RadixInspection RadixCache::inspect(uint64_t ns, std::span<const int32_t> tokens) const {
    const std::vector<NodeId> path = walk(ns, tokens, static_cast<int64_t>(tokens.size()));
    RadixInspection r;
    r.matched_tokens = static_cast<int32_t>(path.size()) * block_size_;
    r.num_nodes = static_cast<int32_t>(path.size());
    auto add_hole = [&](int32_t begin, int32_t end) {
        if (begin >= end) return;
        if (!r.pruned.empty() && r.pruned.back().end == begin) {
            r.pruned.back().end = end;
        } else {
            r.pruned.push_back({.begin = begin, .end = end});
        }
    };
    for (NodeId id : path) {
        const Node& n = nodes_[id];
        r.num_in_use += in_use(n) ? 1 : 0;
        r.num_pinned += n.priority == EvictionPriority::kPinned ? 1 : 0;
        r.num_prefer_evict += n.priority == EvictionPriority::kPreferEvict ? 1 : 0;
        if (!n.pruned) {
            r.num_resident_entries += block_size_;
            continue;
        }
        r.quality_degraded = true;
        r.num_resident_entries += static_cast<int32_t>(n.rows.size());
        const int32_t base = n.depth * block_size_;
        int32_t next = 0;
        for (int32_t row : n.rows) {
            add_hole(base + next, base + row);
            next = row + 1;
        }
        add_hole(base + next, base + block_size_);
    }
    return r;
}

void RadixCache::remove_subtree(NodeId id, int32_t& count) {
    std::vector<NodeId> children;
    for (const auto& [key, child] : nodes_[id].children) children.push_back(child);
    for (NodeId child : children) remove_subtree(child, count);
    remove(id);
    ++count;
}

Expected<std::vector<RadixCache::NodeId>> RadixCache::whole_path(
    uint64_t ns, std::span<const int32_t> tokens) const {
    const auto num_blocks = static_cast<int64_t>(tokens.size()) / block_size_;
    std::vector<NodeId> path = walk(ns, tokens, num_blocks * block_size_);
    if (num_blocks == 0 || static_cast<int64_t>(path.size()) < num_blocks) {
        return not_found(
            fmt::format("the prefix cache holds {} of the {} whole blocks of the selected prefix",
                        path.size(), num_blocks));
    }
    return path;
}

Expected<int32_t> RadixCache::delete_subtree(uint64_t ns, std::span<const int32_t> tokens) {
    SE_ASSIGN_OR_RETURN(const std::vector<NodeId> path, whole_path(ns, tokens));
    int32_t count = 0;
    remove_subtree(path.back(), count);
    return count;
}

Expected<int32_t> RadixCache::set_priority(uint64_t ns, std::span<const int32_t> tokens,
                                           EvictionPriority priority) {
    SE_ASSIGN_OR_RETURN(const std::vector<NodeId> path, whole_path(ns, tokens));
    for (NodeId id : path) nodes_[id].priority = priority;
    return static_cast<int32_t>(path.size());
}

Expected<std::vector<RadixPathNode>> RadixCache::path(uint64_t ns, std::span<const int32_t> tokens,
                                                      int32_t num_blocks) const {
    const std::vector<NodeId> nodes = walk(ns, tokens, int64_t{num_blocks} * block_size_);
    if (static_cast<int32_t>(nodes.size()) < num_blocks) {
        return not_found(fmt::format("the prefix cache holds {} of the {} tokens of the prefix",
                                     nodes.size() * block_size_, num_blocks * block_size_));
    }
    std::vector<RadixPathNode> out;
    for (NodeId id : nodes) {
        const Node& n = nodes_[id];
        out.push_back({.node = id, .block = n.block, .pruned = n.pruned, .in_use = in_use(n)});
    }
    return out;
}

void RadixCache::make_segment(std::span<const int32_t> nodes,
                              std::span<const int32_t> segment_blocks,
                              std::span<const std::vector<int32_t>> resident,
                              std::span<const std::vector<int64_t>> slots) {
    SE_CHECK(nodes.size() == resident.size() && nodes.size() == slots.size());
    for (int32_t id : nodes) {
        const Node& n = nodes_[id];
        SE_CHECK(n.live && n.depth >= 0 && !n.pruned && !in_use(n),
                 "only unpruned, unused nodes become a segment");
    }
    // Taken before the nodes let go of their own blocks: the segment may reuse some of them.
    for (int32_t b : segment_blocks) pool_.ref(b);
    int32_t segment = -1;
    if (!segment_blocks.empty()) {
        if (!free_segments_.empty()) {
            segment = free_segments_.back();
            free_segments_.pop_back();
        } else {
            segment = static_cast<int32_t>(segments_.size());
            segments_.emplace_back();
        }
        Segment& s = segments_[segment];
        s.blocks.assign(segment_blocks.begin(), segment_blocks.end());
        s.live = true;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
        Node& n = nodes_[nodes[i]];
        SE_CHECK(resident[i].size() == slots[i].size());
        stats_.num_pruned_entries += block_size_ - static_cast<int64_t>(resident[i].size());
        pool_.unref(n.block);
        held_[n.block] = false;
        n.block = -1;
        n.pruned = true;
        n.rows = resident[i];
        n.slots = slots[i];
        if (segment >= 0 && !n.rows.empty()) {
            n.segment = segment;
            ++segments_[segment].num_nodes;
        }
    }
    for (int32_t b : segment_blocks) held_[b] = true;
    // Blocks no node reads (every kept entry fitted in fewer blocks) go back at once.
    if (segment >= 0 && segments_[segment].num_nodes == 0) {
        for (int32_t b : segments_[segment].blocks) {
            pool_.unref(b);
            held_[b] = false;
        }
        segments_[segment] = Segment{};
        free_segments_.push_back(segment);
    }
}

}  // namespace se
