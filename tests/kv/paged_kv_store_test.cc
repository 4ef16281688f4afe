#include "kv/paged_kv_store.h"

#include <gtest/gtest.h>

namespace se {
namespace {

PagedKvStore make_store(int64_t num_blocks, int32_t block_size = 4) {
    auto store = PagedKvStore::create({.num_layers = 2,
                                       .layout = {.dtype = DType::kF32,
                                                  .block_size = block_size,
                                                  .num_kv_heads = 2,
                                                  .head_dim = 8},
                                       .num_blocks = num_blocks});
    SE_CHECK(store.ok());
    return std::move(store).value();
}

TEST(PagedKvStoreTest, SlotsFollowTheBlockTable) {
    PagedKvStore store = make_store(8);
    const std::vector<SeqId> ids{7};
    ASSERT_TRUE(store.reserve(ids, std::vector<int32_t>{6}).ok());
    std::vector<int64_t> slots;
    store.append(7, 6, slots);
    auto table = store.block_table(7);
    ASSERT_EQ(table.size(), 2u);
    for (int j = 0; j < 6; ++j) EXPECT_EQ(slots[j], table[j / 4] * 4 + j % 4);
    EXPECT_EQ(store.num_entries(7), 6);
    // Two more entries fit in the second block: no new block.
    EXPECT_EQ(store.blocks_needed(7, 2), 0);
    EXPECT_EQ(store.blocks_needed(7, 3), 1);
}

TEST(PagedKvStoreTest, ReserveIsAllOrNothingAcrossSequences) {
    PagedKvStore store = make_store(3);
    const std::vector<SeqId> ids{1, 2};
    Status s = store.reserve(ids, std::vector<int32_t>{8, 5});  // 2 + 2 blocks > 3
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(store.pool().num_free(), 3);
    EXPECT_TRUE(store.block_table(1).empty());
    EXPECT_TRUE(store.block_table(2).empty());
}

TEST(PagedKvStoreTest, ReleaseReturnsBlocks) {
    PagedKvStore store = make_store(4);
    const std::vector<SeqId> ids{1};
    ASSERT_TRUE(store.reserve(ids, std::vector<int32_t>{9}).ok());
    EXPECT_EQ(store.pool().num_free(), 1);
    store.release(1);
    EXPECT_EQ(store.pool().num_free(), 4);
    EXPECT_FALSE(store.contains(1));
    store.release(1);  // unknown sequence: no-op
}

TEST(PagedKvStoreTest, LayerCachesAreDistinct) {
    PagedKvStore store = make_store(4);
    const PagedKvCache& a = store.layer_cache(0);
    const PagedKvCache& b = store.layer_cache(1);
    EXPECT_NE(a.k_blocks, b.k_blocks);
    EXPECT_NE(a.k_blocks, a.v_blocks);
    EXPECT_EQ(a.num_blocks, 4);
    EXPECT_EQ(store.bytes_per_block(), 2 * 2 * 4 * 2 * 8 * 4);
}

}  // namespace
}  // namespace se
