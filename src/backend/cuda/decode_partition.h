// How decode attention (decode_attention.h) splits each sequence's keys into partitions: one rule
// for the launch and for the workspace size, plain C++ so the CPU tests check it.
//
// A partition is one block of the first pass per KV head. Small launches need short partitions to
// give every SM several blocks; large launches want long ones, so that the per-block start and
// the merge (which reads and writes head_dim + 2 floats per partition and query head) stay small
// beside the KV reads. The rule takes the longest of 256, 512, 1024 keys that still gives
// kDecodeMinPartsPerHead partitions per KV head over the batch:
//
//   num_seqs x max_kv_len   partition   blocks with 8 KV heads
//   1 x 32K                 256         1 x 128 x 8 = 1024    (about 4 waves of 2 blocks/SM
//   16 x 32K                1024        16 x 32 x 8 = 4096     on 132 SMs)
//   64 x 8K                 1024        64 x 8 x 8  = 4096
//   8 x 128K                1024        8 x 128 x 8 = 8192
//
// The rule depends on num_seqs and max_kv_len only (the workspace size function does not know
// the KV head count), so two launches whose (num_seqs, max_kv_len) pick the same partition split
// a sequence identically and give it bit-identical outputs.
#pragma once

#include <cstdint>

namespace se::cuda {

inline constexpr int32_t kDecodeMinPartition = 256;   // keys; a multiple of every block size
inline constexpr int32_t kDecodeMaxPartition = 1024;  // keys
inline constexpr int64_t kDecodeMinPartsPerHead = 128;

// Keys per partition for a launch of num_seqs sequences of at most max_kv_len keys.
constexpr int32_t decode_partition_size(int32_t num_seqs, int32_t max_kv_len) {
    for (int32_t size = kDecodeMaxPartition; size > kDecodeMinPartition; size /= 2) {
        const int64_t parts_per_seq = (int64_t{max_kv_len} + size - 1) / size;
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
// max_len, to size the workspace once at start-up. A size s below the largest is chosen only when
// size 2s gives fewer than kDecodeMinPartsPerHead pairs, and ceil(len / s) <= 2 * ceil(len / 2s),
// so s gives fewer than 2 * kDecodeMinPartsPerHead; the largest size gives
// num_seqs * ceil(len / kDecodeMaxPartition), which grows with both.
constexpr int64_t decode_max_partition_rows(int32_t max_seqs, int32_t max_len) {
    const int64_t largest = int64_t{max_seqs} * decode_num_partitions(max_len, kDecodeMaxPartition);
    return largest > 2 * kDecodeMinPartsPerHead ? largest : 2 * kDecodeMinPartsPerHead;
}

}  // namespace se::cuda
