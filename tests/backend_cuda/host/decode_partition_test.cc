// The partition rule of decode attention (decode_partition.h), checked on the CPU: the sizes it
// picks at the benchmark's shapes, the edges where it flips, and the properties the launch, the
// workspace size and the GPU tests rely on.
#include "backend/cuda/decode_partition.h"

#include <gtest/gtest.h>

namespace se::cuda {
namespace {

TEST(DecodePartition, BenchmarkShapes) {
    EXPECT_EQ(decode_partition_size(1, 32768), 256);
    EXPECT_EQ(decode_partition_size(16, 32768), 1024);
    EXPECT_EQ(decode_partition_size(64, 8192), 1024);
    EXPECT_EQ(decode_partition_size(8, 131072), 1024);
}

TEST(DecodePartition, SmallLaunchesTakeTheShortest) {
    EXPECT_EQ(decode_partition_size(0, 0), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(1, 0), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(1, 1), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(10, 1100), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(1, 4000), kDecodeMinPartition);
}

// 128 partitions per KV head over the batch is the bar for the longer sizes.
TEST(DecodePartition, FlipsWhereTheBatchHas128Partitions) {
    EXPECT_EQ(decode_partition_size(64, 512), 256);    // 64 x 1 of 512
    EXPECT_EQ(decode_partition_size(64, 513), 512);    // 64 x 2 of 512
    EXPECT_EQ(decode_partition_size(64, 1024), 512);   // 64 x 1 of 1024 is not enough...
    EXPECT_EQ(decode_partition_size(64, 1025), 1024);  // ... 64 x 2 is
    EXPECT_EQ(decode_partition_size(127, 1024), 512);
    EXPECT_EQ(decode_partition_size(128, 1024), 1024);
    EXPECT_EQ(decode_partition_size(1, 127 * 512), 256);
    EXPECT_EQ(decode_partition_size(1, 127 * 512 + 1), 512);
    EXPECT_EQ(decode_partition_size(1, 127 * 1024), 512);
    EXPECT_EQ(decode_partition_size(1, 127 * 1024 + 1), 1024);
}

// The GPU test raises a one-sequence launch's bound until it matches a batch's size, and a looser
// bound must never pick a shorter partition: the size grows with both arguments.
TEST(DecodePartition, GrowsWithSequencesAndLength) {
    for (int32_t seqs = 1; seqs <= 300; seqs += 7) {
        for (int32_t len = 0; len <= 140000; len += 997) {
            const int32_t size = decode_partition_size(seqs, len);
            ASSERT_TRUE(size == 256 || size == 512 || size == 1024) << seqs << " x " << len;
            EXPECT_LE(size, decode_partition_size(seqs + 1, len)) << seqs << " x " << len;
            EXPECT_LE(size, decode_partition_size(seqs, len + 997)) << seqs << " x " << len;
        }
    }
}

TEST(DecodePartition, NumPartitionsCoverTheBound) {
    EXPECT_EQ(decode_num_partitions(0, 256), 1);
    EXPECT_EQ(decode_num_partitions(1, 256), 1);
    EXPECT_EQ(decode_num_partitions(256, 256), 1);
    EXPECT_EQ(decode_num_partitions(257, 256), 2);
    EXPECT_EQ(decode_num_partitions(32768, 256), 128);
    EXPECT_EQ(decode_num_partitions(131072, 1024), 128);
    EXPECT_EQ(decode_num_partitions(2147483647, 1024), 2097152);
}

// The start-up bound on the workspace holds for every launch up to the limits it was given.
TEST(DecodePartition, MaxRowsBoundsEveryLaunchUpToTheLimits) {
    for (int32_t max_seqs : {1, 3, 64, 200}) {
        for (int32_t max_len : {1, 700, 4096, 70000}) {
            const int64_t bound = decode_max_partition_rows(max_seqs, max_len);
            int64_t worst = 0;
            for (int32_t seqs = 1; seqs <= max_seqs; seqs += seqs < 8 ? 1 : 7) {
                for (int32_t len = 1; len <= max_len; len += len < 2048 ? 1 : 61) {
                    const int32_t size = decode_partition_size(seqs, len);
                    const int64_t rows = int64_t{seqs} * decode_num_partitions(len, size);
                    worst = rows > worst ? rows : worst;
                }
                const int32_t size = decode_partition_size(seqs, max_len);
                const int64_t rows = int64_t{seqs} * decode_num_partitions(max_len, size);
                worst = rows > worst ? rows : worst;
            }
            EXPECT_LE(worst, bound) << max_seqs << " sequences up to " << max_len << " keys";
        }
    }
    // Tight where the largest partitions rule: 256 sequences of 128K keys.
    EXPECT_EQ(decode_max_partition_rows(256, 131072), 256 * 128);
    EXPECT_EQ(decode_max_partition_rows(1, 100), 2 * kDecodeMinPartsPerHead);
}

}  // namespace
}  // namespace se::cuda
