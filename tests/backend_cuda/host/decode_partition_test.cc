// The partition rule of decode attention (decode_partition.h), checked on the CPU: the sizes it
// picks at the benchmark's shapes, the edges where it flips, and the properties the launch, the
// workspace size and the GPU tests rely on.
#include "backend/cuda/decode_partition.h"

#include <gtest/gtest.h>

namespace se::cuda {
namespace {

TEST(DecodePartition, BenchmarkShapes) {
    EXPECT_EQ(decode_partition_size(1, 1024), 64);
    EXPECT_EQ(decode_partition_size(1, 4096), 128);
    EXPECT_EQ(decode_partition_size(16, 4096), 2048);
    EXPECT_EQ(decode_partition_size(1, 32768), 1024);
    EXPECT_EQ(decode_partition_size(16, 32768), 2048);
    EXPECT_EQ(decode_partition_size(64, 8192), 2048);
    EXPECT_EQ(decode_partition_size(8, 131072), 2048);
}

TEST(DecodePartition, SmallLaunchesTakeTheShortest) {
    EXPECT_EQ(decode_partition_size(0, 0), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(1, 0), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(1, 1), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(1, 1100), kDecodeMinPartition);  // 18 partitions
    EXPECT_EQ(decode_partition_size(1, 2048), kDecodeMinPartition);
    EXPECT_EQ(decode_partition_size(3, 256), kDecodeMinPartition);
}

// 32 partitions per KV head over the batch, of the length rounded up to a power of two, is the
// bar for every size above the shortest.
TEST(DecodePartition, FlipsWhereTheBatchHas32Partitions) {
    EXPECT_EQ(decode_partition_size(1, 2049), 128);  // 1 x 32 of 128 over 4096
    EXPECT_EQ(decode_partition_size(1, 4097), 256);  // 1 x 32 of 256 over 8192
    EXPECT_EQ(decode_partition_size(1, 16384), 512);
    EXPECT_EQ(decode_partition_size(1, 16385), 1024);
    EXPECT_EQ(decode_partition_size(2, 1024), 64);    // 2 x 8 of 128 is not enough
    EXPECT_EQ(decode_partition_size(2, 2048), 128);   // 2 x 16 of 128 is
    EXPECT_EQ(decode_partition_size(31, 1024), 512);  // 31 x 1 of 1024 is not enough
    EXPECT_EQ(decode_partition_size(32, 1024), 2048);
    EXPECT_EQ(decode_partition_size(32, 1), 2048);   // any size >= kv_len splits alike
    EXPECT_EQ(decode_partition_size(8, 1100), 512);  // 8 x 4 of 512 over 2048
    EXPECT_EQ(decode_partition_size(16, 1024), 512);
}

// The rule reads the length as a CUDA graph bucket does: every length of one bucket picks the
// bucket's partition.
TEST(DecodePartition, ReadsTheLengthRoundedUp) {
    EXPECT_EQ(decode_rounded_len(0), 256);
    EXPECT_EQ(decode_rounded_len(256), 256);
    EXPECT_EQ(decode_rounded_len(257), 512);
    EXPECT_EQ(decode_rounded_len(131072), 131072);
    EXPECT_EQ(decode_rounded_len(2147483647), int64_t{1} << 31);
    for (int32_t seqs : {1, 2, 5, 16, 31, 32, 64, 256}) {
        for (int32_t len = 0; len <= 70000; len += 13) {
            EXPECT_EQ(decode_partition_size(seqs, len),
                      decode_partition_size(seqs, static_cast<int32_t>(decode_rounded_len(len))))
                << seqs << " x " << len;
        }
    }
}

// The GPU test raises a one-sequence launch's bound until it matches a batch's size, and a looser
// bound must never pick a shorter partition: the size grows with both arguments.
TEST(DecodePartition, GrowsWithSequencesAndLength) {
    for (int32_t seqs = 1; seqs <= 300; seqs += 7) {
        for (int32_t len = 0; len <= 140000; len += 997) {
            const int32_t size = decode_partition_size(seqs, len);
            ASSERT_TRUE(size == 64 || size == 128 || size == 256 || size == 512 || size == 1024 ||
                        size == 2048)
                << seqs << " x " << len;
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
    EXPECT_EQ(decode_num_partitions(1100, 64), 18);
    EXPECT_EQ(decode_num_partitions(32768, 1024), 32);
    EXPECT_EQ(decode_num_partitions(131072, 1024), 128);
    EXPECT_EQ(decode_num_partitions(2147483647, 1024), 2097152);
}

// The start-up bound on the workspace holds for every launch up to the limits it was given.
TEST(DecodePartition, MaxRowsBoundsEveryLaunchUpToTheLimits) {
    for (int32_t max_seqs : {1, 3, 31, 33, 64, 200}) {
        for (int32_t max_len : {1, 700, 4096, 70000}) {
            const int64_t bound = decode_max_partition_rows(max_seqs, max_len);
            int64_t worst = 0;
            for (int32_t seqs = 1; seqs <= max_seqs; seqs += seqs < 40 ? 1 : 7) {
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
    EXPECT_EQ(decode_max_partition_rows(256, 131072), 256 * 64);  // 2048-key partitions
    EXPECT_EQ(decode_max_partition_rows(1, 100), 2 * kDecodeMinPartsPerHead);
}

// Every key of a partition lies in the table entries the block copies, for every pair of sizes,
// including partitions shorter than a block (they start inside it).
TEST(DecodePartition, TableEntriesCoverEveryKey) {
    for (int32_t block_size = kDecodeMinBlockSize; block_size <= kDecodeMaxBlockSize;
         block_size *= 2) {
        for (int32_t partition = kDecodeMinPartition; partition <= kDecodeMaxPartition;
             partition *= 2) {
            for (int32_t part = 0; part < 40; ++part) {
                const DecodePartitionBlocks b =
                    decode_partition_blocks(part, partition, block_size);
                ASSERT_GE(b.count, 1);
                ASSERT_LE(b.count, kDecodeMaxTableEntries);
                ASSERT_GE(b.offset, 0);
                ASSERT_LT(b.offset, block_size);
                EXPECT_EQ(int64_t{b.first} * block_size + b.offset, int64_t{part} * partition);
                for (int32_t k = 0; k < partition; ++k) {
                    const int32_t at = b.offset + k;  // as the kernel reads key k
                    ASSERT_LT(at / block_size, b.count)
                        << block_size << " " << partition << " " << part << " " << k;
                    EXPECT_EQ(b.first + at / block_size, (part * partition + k) / block_size);
                    EXPECT_EQ(at % block_size, (part * partition + k) % block_size);
                }
            }
        }
    }
    EXPECT_EQ(decode_partition_blocks(3, 64, 256).first, 0);
    EXPECT_EQ(decode_partition_blocks(3, 64, 256).offset, 192);
    EXPECT_EQ(decode_partition_blocks(5, 64, 256).first, 1);
    EXPECT_EQ(decode_partition_blocks(5, 64, 256).offset, 64);
    EXPECT_EQ(decode_partition_blocks(2, 1024, 8).count, 128);
    EXPECT_EQ(decode_partition_blocks(2, kDecodeMaxPartition, 8).count, kDecodeMaxTableEntries);
}

}  // namespace
}  // namespace se::cuda
