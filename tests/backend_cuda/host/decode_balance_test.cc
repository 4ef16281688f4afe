// The balanced split of decode attention (decode_balance.h), checked on the CPU: the block counts
// the rule gives at the benchmark's shapes, that the ranges tile the batch exactly and equally,
// that block_of inverts start, and the workspace bound.
#include "backend/cuda/decode_balance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

namespace se::cuda {
namespace {

constexpr int32_t kH200Sms = 132;

TEST(DecodeBalance, BenchmarkShapes) {
    // 8 KV heads on 132 SMs: 33 blocks a KV head fill one wave of 2 blocks per SM.
    EXPECT_EQ(decode_balanced_blocks(16, 32768, 8, kH200Sms), 33);  // 993 tiles each
    EXPECT_EQ(decode_balanced_blocks(64, 8192, 8, kH200Sms), 33);
    // 8 x 8192 tiles need 65536 / 1024 = 64 ranges at least: two waves of 33.
    EXPECT_EQ(decode_balanced_blocks(8, 131072, 8, kH200Sms), 66);
    // The engine's batch-64 step of 4K contexts, in a graph bucket of 4224 keys (rounded to 8192:
    // 64 x 512 tiles, 993 a block).
    EXPECT_EQ(decode_balanced_blocks(64, 4224, 8, kH200Sms), 33);
}

TEST(DecodeBalance, ShortRangesTakePartitions) {
    // 16 x 256 tiles in 33 ranges of 124: under kDecodeBalancedMinTiles.
    EXPECT_EQ(decode_balanced_blocks(16, 4096, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(16, 4224, 8, kH200Sms), 0);  // the batch-16 step: 248
    // The edge: a wave of 33 ranges of 512 tiles.
    EXPECT_EQ(decode_balanced_blocks(32, 8192, 8, kH200Sms), 0);  // 32 x 512 tiles
    EXPECT_EQ(decode_balanced_blocks(33, 8192, 8, kH200Sms), 33);
    EXPECT_EQ(decode_balanced_blocks(33, 5000, 8, kH200Sms), 33);  // rounded to 8192
    EXPECT_EQ(decode_balanced_blocks(16, 16384, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(17, 16384, 8, kH200Sms), 33);
}

TEST(DecodeBalance, SmallLaunchesTakePartitions) {
    EXPECT_EQ(decode_balanced_blocks(1, 1100, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(1, 32768, 8, kH200Sms), 0);  // partitions of 1024
    EXPECT_EQ(decode_balanced_blocks(4, 4096, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(0, 4096, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(kDecodeBalancedMaxSeqs + 1, 4096, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(16, 4096, 0, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(16, 4096, 8, 0), 0);
}

// Batches past kDecodeBalancedMaxSeqs take partitions, so the workspace bound of a larger
// max_seqs is that of kDecodeBalancedMaxSeqs.
TEST(DecodeBalance, LargeBatchesTakePartitions) {
    EXPECT_EQ(decode_balanced_blocks(256, 65536, 8, kH200Sms), 33 * 32);  // 1M tiles: 32 waves
    EXPECT_EQ(decode_balanced_blocks(257, 65536, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_blocks(1024, 8192, 8, kH200Sms), 0);
    EXPECT_EQ(decode_balanced_max_blocks(1024, 65536, kH200Sms),
              decode_balanced_max_blocks(256, 65536, kH200Sms));
}

TEST(DecodeBalance, MoreKvHeadsThanSlotsStillGetABlock) {
    EXPECT_EQ(decode_balanced_blocks(64, 4096, 64, 16), 1 * 16);  // 64 x 256 tiles / 1024
}

// Every launch the rule splits fits its ranges into a block's table, and an eager step (its own
// max_kv_len) splits like the graph bucket holding it.
TEST(DecodeBalance, RuleFitsAndFollowsTheBucket) {
    for (int32_t seqs : {1, 2, 16, 33, 64, 256}) {
        for (int32_t len : {1, 300, 2048, 4097, 8192, 65536, 131072, 1 << 20}) {
            for (int32_t kv_heads : {1, 2, 8, 64}) {
                const int32_t blocks = decode_balanced_blocks(seqs, len, kv_heads, kH200Sms);
                if (blocks == 0) continue;
                EXPECT_TRUE(decode_balanced_fits(seqs, len, blocks)) << seqs << " x " << len;
                EXPECT_EQ(
                    decode_balanced_blocks(seqs, static_cast<int32_t>(decode_rounded_len(len)),
                                           kv_heads, kH200Sms),
                    blocks);
                EXPECT_LE(blocks, decode_balanced_max_blocks(seqs, len, kH200Sms));
                EXPECT_LE(blocks, decode_balanced_max_blocks(4096, 1 << 20, kH200Sms));
                EXPECT_LE(blocks, decode_balanced_max_blocks(256, 1 << 20, kH200Sms));
            }
        }
    }
}

TEST(DecodeBalance, NoRangeIsEmpty) {
    EXPECT_EQ(decode_balanced_used_blocks(250, 255), 250);
    EXPECT_EQ(decode_balanced_used_blocks(250, 33), 33);
    EXPECT_EQ(decode_balanced_used_blocks(0, 33), 0);
    for (int64_t total : {1, 5, 50, 250}) {
        const int64_t used = decode_balanced_used_blocks(total, 255);
        for (int64_t b = 0; b < used; ++b) {
            EXPECT_LT(decode_balanced_start(b, total, used),
                      decode_balanced_start(b + 1, total, used));
        }
    }
}

TEST(DecodeBalance, RangesTileTheBatchEqually) {
    for (int64_t total : {1, 2, 7, 100, 993, 4160, 65536}) {
        for (int64_t blocks : {1, 2, 3, 33, 66, 1000}) {
            int64_t longest = 0;
            int64_t shortest = total;
            for (int64_t b = 0; b < blocks; ++b) {
                const int64_t begin = decode_balanced_start(b, total, blocks);
                const int64_t end = decode_balanced_start(b + 1, total, blocks);
                ASSERT_LE(begin, end);
                longest = std::max(longest, end - begin);
                shortest = std::min(shortest, end - begin);
                for (int64_t t = begin; t < end; ++t)
                    ASSERT_EQ(decode_balanced_block_of(t, total, blocks), b) << t;
            }
            EXPECT_EQ(decode_balanced_start(0, total, blocks), 0);
            EXPECT_EQ(decode_balanced_start(blocks, total, blocks), total);
            EXPECT_LE(longest - shortest, 1) << total << " tiles in " << blocks;
        }
    }
}

TEST(DecodeBalance, FitsBoundsTheLongestRange) {
    EXPECT_TRUE(decode_balanced_fits(1, kDecodeBalancedMaxTiles * kDecodeTileKeys, 1));
    EXPECT_FALSE(decode_balanced_fits(1, kDecodeBalancedMaxTiles * kDecodeTileKeys + 1, 1));
    EXPECT_TRUE(decode_balanced_fits(2, kDecodeBalancedMaxTiles * kDecodeTileKeys + 1, 3));
    EXPECT_FALSE(decode_balanced_fits(1, 16, 0));
    EXPECT_EQ(decode_tiles(0), 0);
    EXPECT_EQ(decode_tiles(1), 1);
    EXPECT_EQ(decode_tiles(16), 1);
    EXPECT_EQ(decode_tiles(17), 2);
}

}  // namespace
}  // namespace se::cuda
