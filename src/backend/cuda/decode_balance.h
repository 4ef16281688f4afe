// The balanced split of decode attention (decode_attention.h): instead of one block per
// (sequence, partition), every KV head's keys of the whole batch, laid end to end in 16-key
// tiles, are cut into `blocks` ranges of equal length (within one tile), one block each. Plain
// C++, so that the CPU tests check it.
//
//   KV head h, 3 sequences of 40, 100 and 60 tiles, blocks = 4 (50 tiles each):
//   tiles    [0 ....... 40)[40 ................... 140)[140 ....... 200)
//   blocks   [0 ......... 50)[50 ....... 100)[100 ...... 150)[150 ... 200)
//   block 0: all of sequence 0 (its output, direct), the first 10 tiles of sequence 1 (partial)
//   block 1, 2: the middle of sequence 1 (partials); block 2 also sequence 2's first 10 tiles
//   block 3: the rest of sequence 2 (partial)
//
// A block writes a sequence it covers whole straight to the output; it holds a partial only for
// its first and its last sequence, so the workspace has two rows per (KV head, block, query head)
// whatever the batch. A sequence's partials are those of the blocks from the one holding its
// first tile to the one holding its last; a second kernel merges them, or, in launches of many
// sequences, the last of those blocks to finish (decode_balanced.cu).
//
// Why: with one block per partition, a launch many waves deep ends in a partial wave (16 x 32K in
// 2048-key partitions is 2048 blocks on 264 slots, 7.76 waves that take 8; 8 x 128K is 15.5
// waves), and every block pays its start and end. Equal ranges fill every slot to the end and a
// block starts once per range, not once per partition. The rule below gives every KV head as many
// blocks as the SMs hold at 2 blocks each (one wave), or whole multiples of that when a range
// would outgrow the block table the block keeps in shared memory (kDecodeBalancedMaxTiles).
//
// The rule reads max_kv_len rounded up as the partition rule does (decode_partition.h), so that a
// CUDA graph's step and the same step run eagerly split alike and give bit-identical outputs.
#pragma once

#include <cstdint>

#include "backend/cuda/decode_partition.h"
#include "backend/cuda/host_device.h"

namespace se::cuda {

inline constexpr int32_t kDecodeTileKeys = 16;
inline constexpr int32_t kDecodeBalancedMaxTiles = 1024;  // of one block's range: 16384 keys
// The split pays at every sequence a block starts inside its range: the block drains, then loads
// that sequence's table and first tiles. Ranges shorter than this (a wave of them covers the
// launch) take partitions: at batch 16 of 4K contexts (ranges of 126 tiles, two sequences in most)
// an 8B model's decode step took 6.59 -> 6.70 ms, where batch 64 (504 tiles) gained 13.45 ->
// 13.31 ms (H200, 2026-12-01).
inline constexpr int32_t kDecodeBalancedMinTiles = 512;
// Block-table entries of one block's sequence at most: a range in blocks of 8 keys, plus one
// where it starts inside a block.
inline constexpr int32_t kDecodeBalancedMaxTableEntries =
    kDecodeBalancedMaxTiles * kDecodeTileKeys / kDecodeMinBlockSize + 1;
inline constexpr int32_t kDecodeBlocksPerSm = 2;  // the first pass's occupancy (launch bounds)
inline constexpr int32_t kDecodeBalancedMaxBlocks = 65535;  // per KV head: the grid's y
// Balanced launches of more sequences take partitions: every block of the second kernel (one per
// head and sequence) sums the batch's lengths to place its sequence, so its work grows with the
// batch; up to 256 sequences that is one length per thread, read before the kernel's wait.
inline constexpr int32_t kDecodeBalancedMaxSeqs = 256;

SE_HOST_DEVICE constexpr int32_t decode_tiles(int32_t kv_len) {
    return (kv_len + kDecodeTileKeys - 1) / kDecodeTileKeys;
}

// Blocks per KV head of the balanced split for a launch of num_seqs sequences of at most
// max_kv_len keys on num_sms SMs; 0 where the launch takes partitions instead: wherever the
// partition rule picks less than its longest partitions (the launch has SMs to spare and its
// blocks are short: decode_partition.h), where a wave's ranges would be shorter than
// kDecodeBalancedMinTiles, and past kDecodeBalancedMaxSeqs or kDecodeBalancedMaxBlocks.
constexpr int32_t decode_balanced_blocks(int32_t num_seqs, int32_t max_kv_len, int32_t num_kv_heads,
                                         int32_t num_sms) {
    if (num_seqs <= 0 || num_seqs > kDecodeBalancedMaxSeqs || num_kv_heads <= 0 || num_sms <= 0)
        return 0;
    if (decode_partition_size(num_seqs, max_kv_len) < kDecodeRuleMaxPartition) return 0;
    const int64_t slots = int64_t{num_sms} * kDecodeBlocksPerSm / num_kv_heads;
    const int64_t per_wave = slots > 1 ? slots : 1;
    const int64_t tiles = int64_t{num_seqs} * (decode_rounded_len(max_kv_len) / kDecodeTileKeys);
    if (tiles < per_wave * kDecodeBalancedMinTiles) return 0;
    const int64_t wave_tiles = per_wave * kDecodeBalancedMaxTiles;
    const int64_t waves = (tiles + wave_tiles - 1) / wave_tiles;
    const int64_t blocks = per_wave * waves;
    return blocks <= kDecodeBalancedMaxBlocks ? static_cast<int32_t>(blocks) : 0;
}

// The most blocks per KV head the rule gives any launch with num_seqs <= max_seqs and max_kv_len
// <= max_len on num_sms SMs, to size the workspace once at start-up. With w blocks a wave and T
// tiles the rule gives w * ceil(T / (w * kDecodeBalancedMaxTiles)) < w + T /
// kDecodeBalancedMaxTiles, and w is at most kDecodeBlocksPerSm * num_sms (one KV head).
constexpr int64_t decode_balanced_max_blocks(int32_t max_seqs, int32_t max_len, int32_t num_sms) {
    const int64_t per_wave = int64_t{num_sms} * kDecodeBlocksPerSm;
    const int64_t seqs = max_seqs < kDecodeBalancedMaxSeqs ? max_seqs : kDecodeBalancedMaxSeqs;
    const int64_t tiles = seqs * (decode_rounded_len(max_len) / kDecodeTileKeys);
    return per_wave + (tiles + kDecodeBalancedMaxTiles - 1) / kDecodeBalancedMaxTiles;
}

// The first tile of block b's range, of `total` tiles cut into `blocks` ranges; b = blocks gives
// the total. Ranges differ in length by at most one tile.
SE_HOST_DEVICE constexpr int64_t decode_balanced_start(int64_t b, int64_t total, int64_t blocks) {
    return b * total / blocks;
}

// Blocks that take a range when `blocks` cut `total` tiles: all of them, or one per tile when the
// batch has fewer tiles than blocks (the rest take none), so that no range is empty and every
// block from a sequence's first tile to its last holds a partial of it. The ranges are those of
// decode_balanced_start with this many blocks.
SE_HOST_DEVICE constexpr int64_t decode_balanced_used_blocks(int64_t total, int64_t blocks) {
    return total < blocks ? total : blocks;
}

// The block whose range holds tile t < total: the last b with decode_balanced_start(b) <= t.
SE_HOST_DEVICE constexpr int64_t decode_balanced_block_of(int64_t t, int64_t total,
                                                          int64_t blocks) {
    return ((t + 1) * blocks - 1) / total;
}

// Whether `blocks` ranges are short enough for a launch of num_seqs sequences of at most
// max_kv_len keys: no range longer than kDecodeBalancedMaxTiles.
constexpr bool decode_balanced_fits(int32_t num_seqs, int32_t max_kv_len, int32_t blocks) {
    const int64_t tiles = int64_t{num_seqs} * decode_tiles(max_kv_len);
    return blocks > 0 && (tiles + blocks - 1) / blocks <= kDecodeBalancedMaxTiles;
}

}  // namespace se::cuda
