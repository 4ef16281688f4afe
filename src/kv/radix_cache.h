// The prefix cache: blocks of computed KV kept after their sequences finish, found again by the
// token ids they hold. A radix tree at block granularity (one node per full block), one root per
// namespace so that different models, dtypes, methods, knobs or salts never share blocks:
//
//   root(ns) ── [t0 .. t15] ── [t16 .. t31] ── [t32 .. t47]
//                          └── [t16'.. t31'] (another continuation)
//
// The cache holds one pool reference per node. A sequence that reuses a cached prefix takes its
// own references, so a node whose block has reference count 1 is used by nobody and may be
// evicted; such nodes leave leaf first (prefer-evict nodes before the others, pinned nodes never),
// least recently used first (ties: lower node id).
//
// Prefix-Cache Pruning (kv/prefix_pruner.h) turns a run of nodes into a pruned segment: the
// nodes keep their tokens (the matching key is unchanged) but their resident entries, fewer than
// their tokens, sit packed in blocks the segment holds:
//
//   tokens:   [ node a: t0..t15 ][ node b: t16..t31 ][ node c: t32..t47 ]
//   resident:   a keeps t3, t9     b keeps nothing      c keeps t33..t40
//   segment:  [ t3 t9 t33 .. t40 | ]  one block, rows past the last entry unused
//
// A reader of a pruned path sees holes (RadixMatch::pruned) and reads its resident entries by
// slot; such nodes are marked quality-degraded. A segment's blocks return to the pool when its
// last node leaves.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/expected.h"
#include "kv/block_pool.h"
#include "kv/prune_plan.h"

namespace se {

struct RadixCacheStats {
    int64_t num_queries = 0;       // match() calls that counted
    int64_t num_query_tokens = 0;  // tokens asked for
    int64_t num_hit_tokens = 0;    // tokens found
    int64_t num_inserted_blocks = 0;
    int64_t num_evicted_blocks = 0;
    int64_t num_pruned_entries = 0;  // entries dropped by prefix pruning
};

struct RadixMatch {
    // Blocks a reader takes references on, in reading order, each once. Without pruning, block
    // i holds tokens [i * bs, (i + 1) * bs).
    std::vector<int32_t> blocks;
    int32_t num_tokens = 0;  // whole blocks of tokens matched
    // Some matched node was pruned: the resident entries are listed, as slots (block id *
    // block_size + row) with the token position of each, ascending.
    bool pruned = false;
    std::vector<int64_t> slots;      // i64 [resident entries], only when pruned
    std::vector<int32_t> positions;  // i32 [resident entries], only when pruned
};

enum class EvictionPriority : uint8_t {
    kNormal,
    kPinned,       // never evicted (delete_subtree still removes it)
    kPreferEvict,  // evicted before any normal node
};

// What inspect() finds for a prefix.
struct RadixInspection {
    int32_t matched_tokens = 0;
    int32_t num_nodes = 0;
    int32_t num_resident_entries = 0;
    std::vector<TokenRange> pruned;  // merged token ranges whose entries are not resident
    bool quality_degraded = false;   // some matched node was pruned
    int32_t num_in_use = 0;          // matched nodes some sequence reads now
    int32_t num_pinned = 0;
    int32_t num_prefer_evict = 0;
};

// One node of a cached path, as prefix pruning sees it.
struct RadixPathNode {
    int32_t node = -1;
    int32_t block = -1;  // its own block; -1 once pruned
    bool pruned = false;
    bool in_use = false;  // a sequence holds one of the blocks it reads
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

    // Adds the full blocks of a sequence: blocks[i] holds tokens [(first_block + i) * bs, ...).
    // Nodes before first_block must exist already (a sequence that read a pruned prefix
    // publishes only what it computed); if one does not, nothing is added. Blocks already
    // cached under the same tokens stay as they are (the new copy is not taken).
    void insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> blocks,
                int32_t first_block = 0);

    // Blocks only the cache holds, outside pinned nodes (what eviction could free).
    int32_t num_evictable_blocks() const;
    int32_t num_cached_blocks() const { return static_cast<int32_t>(num_nodes_); }
    // Of `blocks`, how many only the cache holds now.
    int32_t count_evictable(std::span<const int32_t> blocks) const;
    // Whether a node or a segment holds `block`.
    bool holds(int32_t block) const;

    // Evicts evictable leaves (prefer-evict first, then least recently used) until `count`
    // blocks returned to the pool or none is left. Returns how many were freed.
    int32_t evict(int32_t count);
    // Evicts every evictable node (a cache flush); nodes in use and pinned nodes stay.
    void flush();

    // The matched prefix of `tokens` (whole blocks) and what is resident in it.
    RadixInspection inspect(uint64_t ns, std::span<const int32_t> tokens) const;
    // Removes the node that ends the whole-block prefix of `tokens` and everything below it,
    // used or not (readers keep their own block references). Returns the nodes removed, or
    // not_found when that prefix is not cached.
    Expected<int32_t> delete_subtree(uint64_t ns, std::span<const int32_t> tokens);
    // Sets the priority of every node on the whole-block prefix of `tokens`. Returns the nodes
    // changed, or not_found when that prefix is not cached.
    Expected<int32_t> set_priority(uint64_t ns, std::span<const int32_t> tokens,
                                   EvictionPriority priority);

    // The nodes of the first `num_blocks` blocks of `tokens`, or not_found when they are not all
    // cached.
    Expected<std::vector<RadixPathNode>> path(uint64_t ns, std::span<const int32_t> tokens,
                                              int32_t num_blocks) const;
    // Turns unpruned, unused path nodes into one pruned segment. The segment takes a reference
    // on each of `segment_blocks` (which may be some of the nodes' own blocks); resident[i]
    // lists, ascending, the rows of nodes[i]'s token block that stay and slots[i] where each now
    // lives. The nodes' own blocks are released.
    void make_segment(std::span<const int32_t> nodes, std::span<const int32_t> segment_blocks,
                      std::span<const std::vector<int32_t>> resident,
                      std::span<const std::vector<int64_t>> slots);

    const RadixCacheStats& stats() const { return stats_; }

  private:
    using NodeId = int32_t;
    struct Node {
        NodeId parent = -1;
        int32_t block = -1;           // own block; -1 for a root or a pruned node
        int32_t depth = -1;           // block index of its tokens; -1 for a root
        int32_t segment = -1;         // pruned: the segment its entries live in
        std::vector<int32_t> rows;    // pruned: ascending rows of its token block still resident
        std::vector<int64_t> slots;   // pruned: where each of those lives
        uint64_t key = 0;             // hash of the block's tokens (child key in the parent)
        std::vector<int32_t> tokens;  // i32 [block_size]
        std::unordered_map<uint64_t, NodeId> children;
        uint64_t last_use = 0;
        EvictionPriority priority = EvictionPriority::kNormal;
        bool pruned = false;
        bool live = false;
    };
    struct Segment {
        std::vector<int32_t> blocks;
        int32_t num_nodes = 0;
        bool live = false;
    };

    uint64_t block_key(std::span<const int32_t> tokens) const;
    NodeId find_child(NodeId node, std::span<const int32_t> tokens) const;
    // Nodes of the longest cached whole-block prefix of tokens[0, max_tokens).
    std::vector<NodeId> walk(uint64_t ns, std::span<const int32_t> tokens,
                             int64_t max_tokens) const;
    RadixMatch compose(std::span<const NodeId> path) const;
    // Nodes of every whole block of tokens, or not_found when some is not cached.
    Expected<std::vector<NodeId>> whole_path(uint64_t ns, std::span<const int32_t> tokens) const;
    NodeId new_node();
    NodeId root(uint64_t ns);
    // The pool blocks a node reads: its own, or its segment's.
    std::span<const int32_t> read_blocks(const Node& n) const;
    bool in_use(const Node& n) const;
    bool evictable_leaf(NodeId id) const;
    void remove(NodeId id);
    void remove_subtree(NodeId id, int32_t& count);

    BlockPool& pool_;
    int32_t block_size_;
    std::vector<Node> nodes_;
    std::vector<NodeId> free_nodes_;
    std::vector<Segment> segments_;
    std::vector<int32_t> free_segments_;
    std::unordered_map<uint64_t, NodeId> roots_;
    std::vector<bool> held_;  // per pool block: a node or segment holds it
    size_t num_nodes_ = 0;    // live non-root nodes
    uint64_t clock_ = 0;      // logical time: deterministic LRU
    RadixCacheStats stats_;
};

}  // namespace se
