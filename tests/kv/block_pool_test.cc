#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace se {
namespace {

TEST(BlockPoolTest, AllocatesDistinctBlocksAndCountsUsage) {
    BlockPool pool(8);
    auto a = pool.allocate(3);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(pool.num_free(), 5);
    EXPECT_DOUBLE_EQ(pool.usage(), 3.0 / 8.0);
    auto b = pool.allocate(5);
    ASSERT_TRUE(b.ok());
    std::set<int32_t> all(a->begin(), a->end());
    all.insert(b->begin(), b->end());
    EXPECT_EQ(all.size(), 8u);
    EXPECT_EQ(pool.num_free(), 0);
}

TEST(BlockPoolTest, FailedAllocationChangesNothing) {
    BlockPool pool(4);
    std::vector<int32_t> held{99};
    ASSERT_TRUE(pool.allocate_into(3, held).ok());
    EXPECT_EQ(held.size(), 4u);
    const std::vector<int32_t> before = held;
    Status s = pool.allocate_into(2, held);
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(s.message().find("2 blocks needed, 1 of 4 free"), std::string::npos);
    EXPECT_EQ(held, before);
    EXPECT_EQ(pool.num_free(), 1);
}

TEST(BlockPoolTest, ReferenceCountsDelayFree) {
    BlockPool pool(2);
    auto ids = pool.allocate(1).value();
    pool.ref(ids[0]);
    EXPECT_EQ(pool.ref_count(ids[0]), 2);
    pool.unref(ids[0]);
    EXPECT_EQ(pool.num_free(), 1);
    pool.unref(ids[0]);
    EXPECT_EQ(pool.num_free(), 2);
    EXPECT_EQ(pool.ref_count(ids[0]), 0);
}

TEST(BlockPoolTest, FreedBlocksAreReused) {
    BlockPool pool(3);
    auto a = pool.allocate(3).value();
    pool.unref_all(a);
    auto b = pool.allocate(3).value();
    std::sort(b.begin(), b.end());
    EXPECT_EQ(b, (std::vector<int32_t>{0, 1, 2}));
}

TEST(BlockPoolDeathTest, DoubleFreeIsABug) {
    BlockPool pool(1);
    auto a = pool.allocate(1).value();
    pool.unref(a[0]);
    EXPECT_DEATH(pool.unref(a[0]), "unref of free block");
}

}  // namespace
}  // namespace se
