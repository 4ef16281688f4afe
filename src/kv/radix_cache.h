// The prefix cache: blocks of computed KV kept after their sequences finish, found again by the
// token ids they hold. A radix tree at block granularity (one node per full block), one root per
// namespace so that different models, dtypes, methods, knobs or salts never share blocks:
//
//   root(ns) ── [t0 .. t15] ── [t16 .. t31] ── [t32 .. t47]
//                          └── [t16'.. t31'] (another continuation)
//
// The cache holds one pool reference per node. A sequence that reuses a cached prefix takes its
// own references, so a node whose block has reference count 1 is used by nobody and may be
// evicted; such nodes leave leaf first, least recently used first (ties: lower node id).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"

namespace se {

struct RadixCacheStats {
    int64_t num_queries = 0;       // match() calls that counted
    int64_t num_query_tokens = 0;  // tokens asked for
    int64_t num_hit_tokens = 0;    // tokens found
    int64_t num_inserted_blocks = 0;
    int64_t num_evicted_blocks = 0;
};

struct RadixMatch {
    std::vector<int32_t> blocks;  // block ids of the matched prefix, in order
    int32_t num_tokens = 0;       // blocks.size() * block_size
};

class RadixCache {
  public:
    RadixCache(BlockPool& pool, int32_t block_size);

    int32_t block_size() const { return block_size_; }

    // Longest cached prefix of `tokens` in whole blocks, at most `max_tokens` tokens. Tokens are
    // compared, not only hashed. Changes nothing but the statistics (when `count` is set) and
    // the recency of the matched nodes (when `touch` is set).
    RadixMatch match(uint64_t ns, std::span<const int32_t> tokens, int32_t max_tokens, bool count,
                     bool touch);
    // The same, pure: for planning.
    RadixMatch peek(uint64_t ns, std::span<const int32_t> tokens, int32_t max_tokens) const;

    // Adds the full blocks of a sequence: blocks[i] holds tokens [i * bs, (i + 1) * bs).
    // Blocks already cached under the same tokens stay as they are (the new copy is not taken).
    void insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> blocks);

    // Blocks only the cache holds (what eviction could free).
    int32_t num_evictable_blocks() const;
    int32_t num_cached_blocks() const { return static_cast<int32_t>(num_nodes_); }
    // Of `blocks`, how many only the cache holds now.
    int32_t count_evictable(std::span<const int32_t> blocks) const;
    // Whether a node holds `block`.
    bool holds(int32_t block) const;

    // Evicts evictable leaves, least recently used first, until `count` blocks returned to the
    // pool or none is left. Returns how many were freed.
    int32_t evict(int32_t count);
    // Evicts every evictable node (a cache flush); nodes in use stay.
    void flush();

    const RadixCacheStats& stats() const { return stats_; }

  private:
    using NodeId = int32_t;
    struct Node {
        NodeId parent = -1;
        int32_t block = -1;           // -1 for a root
        uint64_t key = 0;             // hash of the block's tokens (child key in the parent)
        std::vector<int32_t> tokens;  // i32 [block_size]
        std::unordered_map<uint64_t, NodeId> children;
        uint64_t last_use = 0;
        bool live = false;
    };

    uint64_t block_key(std::span<const int32_t> tokens) const;
    NodeId find_child(NodeId node, std::span<const int32_t> tokens) const;
    NodeId new_node();
    NodeId root(uint64_t ns);
    bool evictable_leaf(NodeId id) const;
    void remove(NodeId id);

    BlockPool& pool_;
    int32_t block_size_;
    std::vector<Node> nodes_;
    std::vector<NodeId> free_nodes_;
    std::unordered_map<uint64_t, NodeId> roots_;
    std::vector<bool> held_;  // per pool block: a node holds it
    size_t num_nodes_ = 0;    // live non-root nodes
    uint64_t clock_ = 0;      // logical time: deterministic LRU
    RadixCacheStats stats_;
};

}  // namespace se
