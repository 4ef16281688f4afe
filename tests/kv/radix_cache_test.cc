#include "kv/radix_cache.h"

#include <gtest/gtest.h>

#include <numeric>

namespace se {
namespace {

constexpr int32_t kBs = 4;

std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 0) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), start);
    return t;
}

// A sequence's own blocks for `n` tokens, as a cache manager would have allocated them.
std::vector<int32_t> own_blocks(BlockPool& pool, int32_t n) {
    return pool.allocate((n + kBs - 1) / kBs).value();
}

TEST(RadixCacheTest, MatchesWholeBlocksOnlyAndComparesTokens) {
    BlockPool pool(16);
    RadixCache cache(pool, kBs);
    const auto tokens = iota_tokens(10);
    const auto blocks = own_blocks(pool, 10);
    cache.insert(7, tokens, std::span(blocks).first(2));  // 8 tokens in whole blocks
    EXPECT_EQ(cache.num_cached_blocks(), 2);
    EXPECT_EQ(pool.ref_count(blocks[0]), 2);

    RadixMatch m = cache.match(7, tokens, 100, true, true);
    EXPECT_EQ(m.num_tokens, 8);
    EXPECT_EQ(m.blocks, (std::vector<int32_t>{blocks[0], blocks[1]}));
    // The limit is respected in whole blocks.
    EXPECT_EQ(cache.peek(7, tokens, 7).num_tokens, 4);
    // A different token in the second block stops the match there.
    auto other = tokens;
    other[5] = 99;
    EXPECT_EQ(cache.peek(7, other, 100).num_tokens, 4);
    // Another namespace sees nothing.
    EXPECT_EQ(cache.peek(8, tokens, 100).num_tokens, 0);
    EXPECT_EQ(cache.stats().num_queries, 1);
    EXPECT_EQ(cache.stats().num_hit_tokens, 8);
    EXPECT_EQ(cache.stats().num_query_tokens, 100);
}

TEST(RadixCacheTest, ReinsertKeepsTheCachedBlock) {
    BlockPool pool(16);
    RadixCache cache(pool, kBs);
    const auto tokens = iota_tokens(8);
    const auto first = own_blocks(pool, 8);
    const auto second = own_blocks(pool, 8);
    cache.insert(1, tokens, first);
    cache.insert(1, tokens, second);
    EXPECT_EQ(cache.num_cached_blocks(), 2);
    EXPECT_EQ(pool.ref_count(second[0]), 1);  // not taken
    EXPECT_EQ(cache.peek(1, tokens, 8).blocks, first);
}

TEST(RadixCacheTest, EvictsUnusedLeavesLeastRecentlyUsedFirst) {
    BlockPool pool(16);
    RadixCache cache(pool, kBs);
    const auto a = iota_tokens(8, 0);
    const auto b = iota_tokens(8, 100);
    const auto blocks_a = own_blocks(pool, 8);
    const auto blocks_b = own_blocks(pool, 8);
    cache.insert(1, a, blocks_a);
    cache.insert(1, b, blocks_b);
    // The sequences finish: only the cache holds the blocks now.
    pool.unref_all(blocks_a);
    pool.unref_all(blocks_b);
    EXPECT_EQ(cache.num_evictable_blocks(), 4);
    cache.match(1, a, 8, false, true);  // a is now the most recent
    EXPECT_EQ(cache.evict(1), 1);
    // b's leaf went first: b matches one block, a still two.
    EXPECT_EQ(cache.peek(1, b, 8).num_tokens, 4);
    EXPECT_EQ(cache.peek(1, a, 8).num_tokens, 8);
    EXPECT_EQ(pool.num_free(), 16 - 3);
    EXPECT_EQ(cache.stats().num_evicted_blocks, 1);
}

TEST(RadixCacheTest, BlocksInUseAreNeverEvicted) {
    BlockPool pool(8);
    RadixCache cache(pool, kBs);
    const auto tokens = iota_tokens(8);
    const auto blocks = own_blocks(pool, 8);
    cache.insert(1, tokens, blocks);
    pool.unref_all(blocks);
    // A new sequence reuses the prefix: it takes its own references.
    const RadixMatch m = cache.match(1, tokens, 8, true, true);
    for (int32_t b : m.blocks) pool.ref(b);
    EXPECT_EQ(cache.num_evictable_blocks(), 0);
    EXPECT_EQ(cache.evict(8), 0);
    EXPECT_EQ(cache.count_evictable(m.blocks), 0);
    pool.unref_all(m.blocks);
    cache.flush();
    EXPECT_EQ(cache.num_cached_blocks(), 0);
    EXPECT_EQ(pool.num_free(), 8);
}

TEST(RadixCacheTest, BranchesShareTheirCommonPrefix) {
    BlockPool pool(16);
    RadixCache cache(pool, kBs);
    auto x = iota_tokens(12);
    auto y = x;
    y[9] = 77;  // differs in the third block
    const auto bx = own_blocks(pool, 12);
    const auto by = own_blocks(pool, 12);
    cache.insert(1, x, bx);
    cache.insert(1, y, by);
    EXPECT_EQ(cache.num_cached_blocks(), 4);  // 2 shared + 1 + 1
    EXPECT_EQ(cache.peek(1, y, 12).blocks, (std::vector<int32_t>{bx[0], bx[1], by[2]}));
    EXPECT_TRUE(cache.holds(bx[0]));
    EXPECT_FALSE(cache.holds(by[0]));
}

}  // namespace
// Caches tokens [0, n) of ns 1 from blocks only the cache holds (the sequence let go).
std::vector<int32_t> cache_alone(BlockPool& pool, RadixCache& cache,
                                 const std::vector<int32_t>& t) {
    const auto blocks = own_blocks(pool, static_cast<int32_t>(t.size()));
    cache.insert(1, t, blocks);
    pool.unref_all(blocks);
    return blocks;
}

TEST(RadixCacheTest, PreferEvictLeavesFirstAndPinnedNeverByEviction) {
    BlockPool pool(16);
    RadixCache cache(pool, kBs);
    const auto a = iota_tokens(8, 0);
    const auto b = iota_tokens(8, 100);
    cache_alone(pool, cache, a);  // older
    cache_alone(pool, cache, b);
    ASSERT_TRUE(cache.set_priority(1, b, EvictionPriority::kPreferEvict).ok());
    EXPECT_EQ(cache.evict(2), 2);
    EXPECT_EQ(cache.peek(1, b, 8).num_tokens, 0);  // b went first although newer
    EXPECT_EQ(cache.peek(1, a, 8).num_tokens, 8);

    ASSERT_TRUE(cache.set_priority(1, a, EvictionPriority::kPinned).ok());
    EXPECT_EQ(cache.num_evictable_blocks(), 0);
    cache.flush();
    EXPECT_EQ(cache.peek(1, a, 8).num_tokens, 8);
    EXPECT_EQ(cache.inspect(1, a).num_pinned, 2);
    // delete_subtree removes pinned nodes too.
    EXPECT_EQ(cache.delete_subtree(1, a).value(), 1);  // the node ending [0, 8) and below
    EXPECT_EQ(cache.peek(1, a, 8).num_tokens, 4);
    EXPECT_EQ(cache.delete_subtree(1, iota_tokens(3)).status().code(), StatusCode::kNotFound);
}

TEST(RadixCacheTest, APrunedSegmentKeepsTheKeyListsResidentEntriesAndFreesWithItsLastNode) {
    BlockPool pool(16);
    RadixCache cache(pool, kBs);
    const auto t = iota_tokens(16);
    const auto blocks = cache_alone(pool, cache, t);  // 4 nodes
    const int32_t free_before = pool.num_free();
    // Nodes 1 and 2 keep positions 5 and 10, 11 packed into node 1's block.
    auto path = cache.path(1, t, 4);
    ASSERT_TRUE(path.ok());
    const int64_t b1 = blocks[1];
    cache.make_segment(std::vector<int32_t>{(*path)[1].node, (*path)[2].node},
                       std::vector<int32_t>{blocks[1]},
                       std::vector<std::vector<int32_t>>{{1}, {2, 3}},
                       std::vector<std::vector<int64_t>>{{b1 * kBs}, {b1 * kBs + 1, b1 * kBs + 2}});
    EXPECT_EQ(pool.num_free(), free_before + 1);  // block 2 returned
    EXPECT_EQ(cache.stats().num_pruned_entries, 5);

    const RadixMatch m = cache.peek(1, t, 16);
    EXPECT_EQ(m.num_tokens, 16);  // the key is unchanged
    EXPECT_TRUE(m.pruned);
    EXPECT_EQ(m.blocks, (std::vector<int32_t>{blocks[0], blocks[1], blocks[3]}));
    EXPECT_EQ(m.positions, (std::vector<int32_t>{0, 1, 2, 3, 5, 10, 11, 12, 13, 14, 15}));
    EXPECT_EQ(m.slots[4], b1 * kBs);
    EXPECT_EQ(m.slots[6], b1 * kBs + 2);
    const RadixInspection seen = cache.inspect(1, t);
    EXPECT_TRUE(seen.quality_degraded);
    EXPECT_EQ(seen.num_resident_entries, 11);
    EXPECT_EQ(seen.pruned, (std::vector<TokenRange>{{4, 5}, {6, 10}}));

    // Leaves go first: node 3, then node 2 (the segment stays for node 1), then node 1 frees it.
    EXPECT_EQ(cache.evict(1), 1);
    EXPECT_EQ(cache.evict(1), 1);
    EXPECT_EQ(cache.peek(1, t, 16).num_tokens, 4);
    EXPECT_EQ(pool.ref_count(blocks[1]), 0);
    EXPECT_EQ(pool.num_free(), 16 - 1);
}

}  // namespace se
