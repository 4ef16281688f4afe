// Decode attention over whole sequences (decode_whole.cu): one block per (sequence, KV head) reads
// the sequence's every key and writes its output rows, with no split and no merge. Plain C++, so
// that the CPU tests check the rule.
//
// Why: where the batch's (sequence, KV head) pairs fill the SMs once, one block each is one wave
// with nothing to merge, as cuDNN's SDPA runs decode; the split launches pay a merge (a second
// kernel, or the last block's round trips) and, at short contexts, partial waves of partitions.
// Measured against what the other rules run (H200, 2026-12-04, graph ms; eighteenth run, blocks of
// eight warps then): 16 x 4K 0.0623 against 0.0662, 16 x 8K 0.1217 against 0.1287, 16 x 16K
// 0.2387 against 0.2542, 16 x 32K 0.4779 / 0.4757 against the balanced split's 0.4810 / 0.4811
// (128 blocks on 132 SMs); but 15 x 32K 0.4563 / 0.4539 against the balanced split's 0.4513 /
// 0.4510 and 14 x 32K 0.4298 against 0.4227, where 12 and 20 SMs stay idle. At 8 x 128K the
// sequences are longer than a block's table.
//
// Blocks of four warps. In one wave, one an SM: each asks for kDecodeWholeOneAnSmSmem of shared
// memory, so that under programmatic dependent launch the hardware cannot put two on the SMs that
// the GEMV before frees first and leave others idle. Left to pair, four warps were faster alone
// (16 x 32K 0.4722 against eight warps' 0.4768) but batch-16 steps of an 8B model took 6.49 ->
// 6.72 ms (nineteenth run); spaced, 16 x 32K 0.4725 / 0.4727 against eight warps' 0.4786 / 0.4775,
// 16 x 16K 0.2382 / 0.2380 against 0.2393 / 0.2396, 16 x 8K 0.1209 both, 16 x 4148 0.0632 /
// 0.0631 against 0.0630 / 0.0628, and batch-16 steps 6.517 ms against 6.535 (mean of three,
// interleaved; twentieth run).
//
// Past one wave, two an SM (decode_whole_two_per_sm), where they make one or two waves of the
// 2 x SMs slots, the last at least 15/16 full: each SM then streams one block while the other
// starts or ends. Nineteenth run (graph ms, one instance, two runs each): 64 x 8K (512 blocks, 248
// in the second wave) 0.4783 / 0.4783 against the balanced split's 0.4868 / 0.4852, 64 x 4224 (the
// gpu-dense batch-64 step) 0.2490 against 0.2556, 32 x 16K (256 blocks) 0.4805 / 0.4819 against
// 0.4849 / 0.4852; eight warps, one an SM, at 64 x 8K (four waves) 0.4833 / 0.4829 and 48 x 8K
// 0.3601, and four warps at 48 x 8K (384 blocks: 120 in the second wave) 0.3753 / 0.3762 against
// the balanced split's 0.3664 / 0.3677. Batch-64 decode steps of an 8B model 13.54 -> 13.15 ms.
#pragma once

#include <cstdint>

#include "backend/cuda/decode_partition.h"

namespace se::cuda {

inline constexpr int32_t kDecodeWholeWarps = 4;  // a block's warps
// Shared memory a block of the one-wave rule asks for, used or not: more than half of an sm_90
// SM's 228 KB (with the 1 KB each CTA reserves), so that no SM takes two of them.
inline constexpr int32_t kDecodeWholeOneAnSmSmem = 116 * 1024;
static_assert(2 * (kDecodeWholeOneAnSmSmem + 1024) > 228 * 1024 &&
                  kDecodeWholeOneAnSmSmem <= 227 * 1024,
              "one block an SM, and it fits");
inline constexpr int32_t kDecodeWholeMaxLen = 32768;  // keys a block takes at most
// The rule's shortest sequences (max_kv_len rounded as decode_rounded_len): the shortest measured.
inline constexpr int32_t kDecodeWholeMinLen = 4096;
// Block-table entries of one sequence at most: kDecodeWholeMaxLen keys in blocks of 8.
inline constexpr int32_t kDecodeWholeMaxTableEntries = kDecodeWholeMaxLen / kDecodeMinBlockSize;

// Whether a launch of num_seqs sequences of at most max_kv_len keys takes whole sequences, one
// block an SM, on num_sms SMs: where its num_seqs * num_kv_heads blocks are
// one wave that leaves at most a 32nd of the SMs idle, and max_kv_len rounds to
// [kDecodeWholeMinLen, kDecodeWholeMaxLen]. It reads max_kv_len rounded as the other rules do, so
// that a CUDA graph's step and the same step run eagerly take the same kernel.
constexpr bool decode_whole_one_wave(int32_t num_seqs, int32_t max_kv_len, int32_t num_kv_heads,
                                     int32_t num_sms) {
    if (num_seqs <= 0 || num_kv_heads <= 0 || num_sms <= 0) return false;
    const int64_t blocks = int64_t{num_seqs} * num_kv_heads;
    const int64_t len = decode_rounded_len(max_kv_len);
    return blocks <= num_sms && blocks * 32 >= int64_t{num_sms} * 31 && len >= kDecodeWholeMinLen &&
           len <= kDecodeWholeMaxLen;
}

// Whether it takes whole sequences, two blocks an SM: more blocks
// than SMs, at most two waves of 2 x num_sms, the last wave at least 15/16 full, and the same
// contexts.
constexpr bool decode_whole_two_per_sm(int32_t num_seqs, int32_t max_kv_len, int32_t num_kv_heads,
                                       int32_t num_sms) {
    if (num_seqs <= 0 || num_kv_heads <= 0 || num_sms <= 0) return false;
    const int64_t blocks = int64_t{num_seqs} * num_kv_heads;
    const int64_t slots = 2 * int64_t{num_sms};
    const int64_t last_wave = blocks % slots == 0 ? slots : blocks % slots;
    const int64_t len = decode_rounded_len(max_kv_len);
    return blocks > num_sms && blocks <= 2 * slots && last_wave * 16 >= slots * 15 &&
           len >= kDecodeWholeMinLen && len <= kDecodeWholeMaxLen;
}

// Either of the two.
constexpr bool decode_whole_sequences(int32_t num_seqs, int32_t max_kv_len, int32_t num_kv_heads,
                                      int32_t num_sms) {
    return decode_whole_one_wave(num_seqs, max_kv_len, num_kv_heads, num_sms) ||
           decode_whole_two_per_sm(num_seqs, max_kv_len, num_kv_heads, num_sms);
}

}  // namespace se::cuda
