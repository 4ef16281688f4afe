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
}  // namespace se
