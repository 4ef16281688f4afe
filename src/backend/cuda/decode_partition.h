// How decode attention (decode_attention.h) splits each sequence's keys into partitions: one rule
// for the launch and for the workspace size, plain C++ so the CPU tests check it.
//
// A partition is one block of the first pass per KV head (4 warps of 16-key tiles). Every block
// pays a start (kv_len and table loads, then its first tiles) and an end (the last tiles drain,
// the warps merge, the partial goes out) during which it has little in flight, and every partial
// is written and read again by the merge; so the rule takes the longest partition of 64 .. 2048
// keys (the longest a launch may take) that still gives kDecodeMinPartsPerHead partitions per KV
// head over the batch, which at 8 KV heads is about one wave of 2 blocks per SM on 132 SMs.
// Short partitions exist for the small launches: a 1.1K-key sequence gets 18 partitions of 64
// keys (144 blocks) where 256 keys gave 40. The long ones are for the large launches, many waves
// deep: 2048 keys against 1024 took 1.6-3% off 16 x 4K, 16 x 32K, 64 x 8K and 8 x 128K (H200,
// 2026-12-01, se_cuda_decode_attention_bench --sweep).
//
//   num_seqs x max_kv_len   partition   blocks with 8 KV heads
//   1 x 1K                  64          1 x 16 x 8  = 128
//   1 x 4K                  128         1 x 32 x 8  = 256
//   16 x 4K                 2048        16 x 2 x 8  = 256
//   1 x 32K                 1024        1 x 32 x 8  = 256
//   16 x 32K                2048        16 x 16 x 8 = 2048
//   64 x 8K                 2048        64 x 4 x 8  = 2048
//   8 x 128K                2048        8 x 64 x 8  = 4096
//
// The rule reads max_kv_len rounded up to a power of two of at least 256, as CUDA graph steps
// bucket it (decode_graph_key.h), so that a graph step and the same step run eagerly pick the same
// partition. It depends on num_seqs and max_kv_len only (the workspace size function does not know
// the KV head count), so two launches whose (num_seqs, max_kv_len) pick the same partition split a
// sequence identically and give it bit-identical outputs.
//
// Partitions start at multiples of their size, and sizes and block sizes are powers of two, so a
// partition either covers whole blocks or lies inside one (64 keys in a block of 256):
//
//   block_size 256:  | block t[0] ............................................ |
//   partition 64:    | part 0 | part 1 | part 2 | part 3 |
//                               ^ starts at key 64 of block t[0]: table entry 0, offset 64
#pragma once

#include <cstdint>

#include "backend/cuda/host_device.h"

namespace se::cuda {

inline constexpr int32_t kDecodeMinPartition = 64;        // keys: one 16-key tile per warp
inline constexpr int32_t kDecodeRuleMaxPartition = 2048;  // keys: the longest the rule picks
inline constexpr int32_t kDecodeMaxPartition = 2048;      // keys: the longest a launch may take
inline constexpr int64_t kDecodeMinPartsPerHead = 32;
inline constexpr int32_t kDecodeMinRoundedLen = 256;  // as kDecodeGraphMinBucket
inline constexpr int32_t kDecodeMinBlockSize = 8;
inline constexpr int32_t kDecodeMaxBlockSize = 256;
// Block-table entries of one partition at most: kDecodeMaxPartition keys in blocks of 8.
inline constexpr int32_t kDecodeMaxTableEntries = kDecodeMaxPartition / kDecodeMinBlockSize;

// max_kv_len as the rule reads it: the next power of two, at least kDecodeMinRoundedLen.
constexpr int64_t decode_rounded_len(int32_t max_kv_len) {
    int64_t len = kDecodeMinRoundedLen;
    while (len < max_kv_len) len *= 2;
    return len;
}

// Keys per partition for a launch of num_seqs sequences of at most max_kv_len keys.
constexpr int32_t decode_partition_size(int32_t num_seqs, int32_t max_kv_len) {
    const int64_t len = decode_rounded_len(max_kv_len);
    for (int32_t size = kDecodeRuleMaxPartition; size > kDecodeMinPartition; size /= 2) {
        const int64_t parts_per_seq = (len + size - 1) / size;
        if (int64_t{num_seqs} * parts_per_seq >= kDecodeMinPartsPerHead) return size;
    }
    return kDecodeMinPartition;
}

// Partitions the grid gives each sequence: enough for max_kv_len, and at least one.
constexpr int32_t decode_num_partitions(int32_t max_kv_len, int32_t partition) {
    const int32_t n = static_cast<int32_t>((int64_t{max_kv_len} + partition - 1) / partition);
    return n > 1 ? n : 1;
}

// The most (sequence, partition) pairs of any launch with num_seqs <= max_seqs and max_kv_len <=
// max_len whose partition the rule chose, to size the workspace once at start-up. Let R be the
// rounded length (R >= len). A size s below the largest is chosen only when size 2s gives fewer
// than kDecodeMinPartsPerHead pairs over R, and ceil(len / s) <= ceil(R / s) <= 2 * ceil(R / 2s),
// so s gives fewer than 2 * kDecodeMinPartsPerHead; the largest size gives
// num_seqs * ceil(len / kDecodeRuleMaxPartition), which grows with both.
constexpr int64_t decode_max_partition_rows(int32_t max_seqs, int32_t max_len) {
    const int64_t largest =
        int64_t{max_seqs} * decode_num_partitions(max_len, kDecodeRuleMaxPartition);
    return largest > 2 * kDecodeMinPartsPerHead ? largest : 2 * kDecodeMinPartsPerHead;
}

// The block-table entries that partition `part` reads: entries [first, first + count) of its
// sequence's row, the partition's first key at `offset` inside block `first`.
struct DecodePartitionBlocks {
    int32_t first = 0;
    int32_t count = 0;  // max(1, partition / block_size) <= kDecodeMaxTableEntries
    int32_t offset = 0;
};

// partition and block_size: powers of two, block_size in [8, 256]; part * partition < 2^31 (the
// launch allows at most 65535 partitions of at most 2048 keys).
SE_HOST_DEVICE constexpr DecodePartitionBlocks decode_partition_blocks(int32_t part,
                                                                       int32_t partition,
                                                                       int32_t block_size) {
    const int32_t begin = part * partition;
    const int32_t count = partition > block_size ? partition / block_size : 1;
    return {begin / block_size, count, begin % block_size};
}

}  // namespace se::cuda
