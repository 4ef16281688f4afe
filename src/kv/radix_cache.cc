#include "kv/radix_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <queue>

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

RadixMatch RadixCache::peek(uint64_t ns, std::span<const int32_t> tokens,
                            int32_t max_tokens) const {
    RadixMatch m;
    auto root_it = roots_.find(ns);
    if (root_it == roots_.end()) return m;
    NodeId node = root_it->second;
    const auto limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
    for (int64_t begin = 0; begin + block_size_ <= limit; begin += block_size_) {
        const NodeId child = find_child(node, tokens.subspan(begin, block_size_));
        if (child < 0) break;
        m.blocks.push_back(nodes_[child].block);
        m.num_tokens += block_size_;
        node = child;
    }
    return m;
}

RadixMatch RadixCache::match(uint64_t ns, std::span<const int32_t> tokens, int32_t max_tokens,
                             bool count, bool touch) {
    RadixMatch m = peek(ns, tokens, max_tokens);
    if (count) {
        ++stats_.num_queries;
        stats_.num_query_tokens += std::max(0, max_tokens);
        stats_.num_hit_tokens += m.num_tokens;
    }
    if (touch && !m.blocks.empty()) {
        ++clock_;
        NodeId node = roots_.at(ns);
        for (size_t i = 0; i < m.blocks.size(); ++i) {
            node = find_child(node, tokens.subspan(i * block_size_, block_size_));
            nodes_[node].last_use = clock_;
        }
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
                        std::span<const int32_t> blocks) {
    SE_CHECK(tokens.size() >= blocks.size() * static_cast<size_t>(block_size_));
    ++clock_;
    NodeId node = root(ns);
    for (size_t i = 0; i < blocks.size(); ++i) {
        const auto block_tokens = tokens.subspan(i * block_size_, block_size_);
        NodeId child = find_child(node, block_tokens);
        if (child < 0) {
            const uint64_t key = block_key(block_tokens);
            // A different block under the same hash (a 64-bit collision): keep the old one.
            if (nodes_[node].children.count(key) != 0) return;
            child = new_node();
            Node& c = nodes_[child];
            c.parent = node;
            c.block = blocks[i];
            c.key = key;
            c.tokens.assign(block_tokens.begin(), block_tokens.end());
            nodes_[node].children.emplace(key, child);
            pool_.ref(blocks[i]);
            held_[blocks[i]] = true;
            ++num_nodes_;
            ++stats_.num_inserted_blocks;
        }
        nodes_[child].last_use = clock_;
        node = child;
    }
}

int32_t RadixCache::num_evictable_blocks() const {
    int32_t n = 0;
    for (const Node& node : nodes_) {
        if (node.live && node.block >= 0 && pool_.ref_count(node.block) == 1) ++n;
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
    return n.live && n.block >= 0 && n.children.empty() && pool_.ref_count(n.block) == 1;
}

void RadixCache::remove(NodeId id) {
    Node& n = nodes_[id];
    nodes_[n.parent].children.erase(n.key);
    pool_.unref(n.block);
    held_[n.block] = false;
    n = Node{};
    free_nodes_.push_back(id);
    --num_nodes_;
    ++stats_.num_evicted_blocks;
}

int32_t RadixCache::evict(int32_t count) {
    using Entry = std::pair<uint64_t, NodeId>;  // (last use, id): oldest first, then lower id
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> leaves;
    for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
        if (evictable_leaf(id)) leaves.emplace(nodes_[id].last_use, id);
    }
    int32_t freed = 0;
    while (freed < count && !leaves.empty()) {
        const NodeId id = leaves.top().second;
        leaves.pop();
        const NodeId parent = nodes_[id].parent;
        remove(id);
        ++freed;
        if (evictable_leaf(parent)) leaves.emplace(nodes_[parent].last_use, parent);
    }
    return freed;
}

void RadixCache::flush() {
    evict(static_cast<int32_t>(num_nodes_));
}

}  // namespace se
