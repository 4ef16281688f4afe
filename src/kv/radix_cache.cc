#include "kv/radix_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <queue>
#include <tuple>

#include "core/check.h"

namespace se {

RadixCache::RadixCache(BlockPool& pool, int32_t block_size)
    : pool_(pool), block_size_(block_size), held_(static_cast<size_t>(pool.num_blocks()), false) {
    SE_CHECK(block_size > 0);
}

uint64_t RadixCache::block_key(std::span<const int32_t> tokens) const {
    return XXH3_64bits(tokens.data(), tokens.size_bytes());
}

RadixCache::NodeId RadixCache::find_child(NodeId node, std::span<const int32_t> tokens) const {
    const auto& children = nodes_[node].children;
    auto it = children.find(block_key(tokens));
    if (it == children.end()) return -1;
    const Node& child = nodes_[it->second];
    if (!std::equal(tokens.begin(), tokens.end(), child.tokens.begin())) return -1;
    return it->second;
}

std::vector<RadixCache::NodeId> RadixCache::walk(uint64_t ns, std::span<const int32_t> tokens,
                                                 int64_t max_tokens) const {
    std::vector<NodeId> path;
    auto root_it = roots_.find(ns);
    if (root_it == roots_.end()) return path;
    NodeId node = root_it->second;
    const auto limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
    for (int64_t begin = 0; begin + block_size_ <= limit; begin += block_size_) {
        const NodeId child = find_child(node, tokens.subspan(begin, block_size_));
        if (child < 0) break;
        path.push_back(child);
        node = child;
    }
    return path;
}

std::span<const int32_t> RadixCache::read_blocks(const Node& n) const {
    if (!n.pruned) return {&n.block, 1};
    if (n.segment < 0) return {};
    return segments_[n.segment].blocks;
}

RadixMatch RadixCache::compose(std::span<const NodeId> path) const {
    RadixMatch m;
    m.num_tokens = static_cast<int32_t>(path.size()) * block_size_;
    m.pruned = std::any_of(path.begin(), path.end(), [&](NodeId id) { return nodes_[id].pruned; });
    int32_t last_segment = -1;
    for (NodeId id : path) {
        const Node& n = nodes_[id];
        if (!n.pruned) {
            m.blocks.push_back(n.block);
            last_segment = -1;
            if (!m.pruned) continue;
            for (int32_t row = 0; row < block_size_; ++row) {
                m.slots.push_back(int64_t{n.block} * block_size_ + row);
                m.positions.push_back(n.depth * block_size_ + row);
            }
            continue;
        }
        if (n.segment >= 0 && n.segment != last_segment) {
            const auto& blocks = segments_[n.segment].blocks;
            m.blocks.insert(m.blocks.end(), blocks.begin(), blocks.end());
            last_segment = n.segment;
        }
        for (size_t i = 0; i < n.rows.size(); ++i) {
            m.slots.push_back(n.slots[i]);
            m.positions.push_back(n.depth * block_size_ + n.rows[i]);
        }
    }
    return m;
}

RadixMatch RadixCache::peek(uint64_t ns, std::span<const int32_t> tokens,
                            int32_t max_tokens) const {
    return compose(walk(ns, tokens, max_tokens));
}

RadixMatch RadixCache::match(uint64_t ns, std::span<const int32_t> tokens, int32_t max_tokens,
                             bool count, bool touch) {
    const std::vector<NodeId> path = walk(ns, tokens, max_tokens);
    RadixMatch m = compose(path);
    if (count) {
        ++stats_.num_queries;
        stats_.num_query_tokens += std::max(0, max_tokens);
        stats_.num_hit_tokens += m.num_tokens;
    }
    if (touch && !path.empty()) {
        ++clock_;
        for (NodeId id : path) nodes_[id].last_use = clock_;
    }
    return m;
}

RadixCache::NodeId RadixCache::new_node() {
    NodeId id;
    if (!free_nodes_.empty()) {
        id = free_nodes_.back();
        free_nodes_.pop_back();
    } else {
        id = static_cast<NodeId>(nodes_.size());
        nodes_.emplace_back();
    }
    nodes_[id] = Node{};
    nodes_[id].live = true;
    return id;
}

RadixCache::NodeId RadixCache::root(uint64_t ns) {
    auto it = roots_.find(ns);
    if (it != roots_.end()) return it->second;
    const NodeId id = new_node();
    roots_.emplace(ns, id);
    return id;
}

void RadixCache::insert(uint64_t ns, std::span<const int32_t> tokens,
                        std::span<const int32_t> blocks, int32_t first_block) {
    const auto num_blocks = static_cast<size_t>(first_block) + blocks.size();
    SE_CHECK(first_block >= 0 && tokens.size() >= num_blocks * static_cast<size_t>(block_size_));
    ++clock_;
    NodeId node = root(ns);
    for (size_t i = 0; i < num_blocks; ++i) {
        const auto block_tokens = tokens.subspan(i * block_size_, block_size_);
        NodeId child = find_child(node, block_tokens);
        if (child < 0) {
            if (i < static_cast<size_t>(first_block)) return;
            const uint64_t key = block_key(block_tokens);
            // A different block under the same hash (a 64-bit collision): keep the old one.
            if (nodes_[node].children.count(key) != 0) return;
            const int32_t block = blocks[i - first_block];
            child = new_node();
            Node& c = nodes_[child];
            c.parent = node;
            c.block = block;
            c.depth = static_cast<int32_t>(i);
            c.key = key;
            c.tokens.assign(block_tokens.begin(), block_tokens.end());
            nodes_[node].children.emplace(key, child);
            pool_.ref(block);
            held_[block] = true;
            ++num_nodes_;
            ++stats_.num_inserted_blocks;
        }
        nodes_[child].last_use = clock_;
        node = child;
    }
}

bool RadixCache::in_use(const Node& n) const {
    const auto blocks = read_blocks(n);
    return std::any_of(blocks.begin(), blocks.end(),
                       [&](int32_t b) { return pool_.ref_count(b) > 1; });
}

int32_t RadixCache::num_evictable_blocks() const {
    int32_t n = 0;
    std::vector<bool> pinned_segment(segments_.size(), false);
    for (const Node& node : nodes_) {
        if (node.live && node.pruned && node.segment >= 0 &&
            node.priority == EvictionPriority::kPinned) {
            pinned_segment[node.segment] = true;
        }
    }
    for (const Node& node : nodes_) {
        if (!node.live || node.depth < 0 || node.pruned) continue;
        if (node.priority != EvictionPriority::kPinned && pool_.ref_count(node.block) == 1) ++n;
    }
    for (size_t s = 0; s < segments_.size(); ++s) {
        if (!segments_[s].live || pinned_segment[s]) continue;
        for (int32_t b : segments_[s].blocks) n += pool_.ref_count(b) == 1 ? 1 : 0;
    }
    return n;
}

int32_t RadixCache::count_evictable(std::span<const int32_t> blocks) const {
    return static_cast<int32_t>(std::count_if(blocks.begin(), blocks.end(),
                                              [&](int32_t b) { return pool_.ref_count(b) == 1; }));
}

bool RadixCache::holds(int32_t block) const {
    return held_.at(block);
}

bool RadixCache::evictable_leaf(NodeId id) const {
    const Node& n = nodes_[id];
    return n.live && n.depth >= 0 && n.children.empty() &&
           n.priority != EvictionPriority::kPinned && !in_use(n);
}

void RadixCache::remove(NodeId id) {
    Node& n = nodes_[id];
    nodes_[n.parent].children.erase(n.key);
    if (!n.pruned) {
        pool_.unref(n.block);
        held_[n.block] = false;
        ++stats_.num_evicted_blocks;
    } else if (n.segment >= 0) {
        Segment& s = segments_[n.segment];
        if (--s.num_nodes == 0) {
            for (int32_t b : s.blocks) {
                pool_.unref(b);
                held_[b] = false;
            }
            stats_.num_evicted_blocks += static_cast<int64_t>(s.blocks.size());
            s = Segment{};
            free_segments_.push_back(n.segment);
        }
    }
    n = Node{};
    free_nodes_.push_back(id);
    --num_nodes_;
}

int32_t RadixCache::evict(int32_t count) {
    // (prefer-evict first, last use, id): the order leaves leave in.
    using Entry = std::tuple<int, uint64_t, NodeId>;
    auto entry = [&](NodeId id) {
        const int rank = nodes_[id].priority == EvictionPriority::kPreferEvict ? 0 : 1;
        return Entry{rank, nodes_[id].last_use, id};
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> leaves;
    for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
        if (evictable_leaf(id)) leaves.push(entry(id));
    }
    const int32_t free_before = pool_.num_free();
    while (pool_.num_free() - free_before < count && !leaves.empty()) {
        const NodeId id = std::get<2>(leaves.top());
        leaves.pop();
        const NodeId parent = nodes_[id].parent;
        remove(id);
        if (evictable_leaf(parent)) leaves.push(entry(parent));
    }
    return pool_.num_free() - free_before;
}

void RadixCache::flush() {
    evict(pool_.num_blocks());
}

}  // namespace se
