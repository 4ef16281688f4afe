// Decode attention over whole sequences (decode_whole.cu): one block of kDecodeWholeWarps warps
// per (sequence, KV head) reads the sequence's every key and writes its output rows, with no split
// and no merge. Plain C++, so that the CPU tests check the rule.
//
// Why: where the batch's (sequence, KV head) pairs fill the SMs once, one block each is one wave
// with nothing to merge, as cuDNN's SDPA runs decode; the split launches pay a merge (a second
// kernel, or the last block's round trips) and, at short contexts, partial waves of partitions.
// Eight warps per block at one block per SM keep each SM's warps and bytes in flight those of the
// split's two blocks of four (four warps a block in this layout took 0.568 ms at 16 x 32K:
// docs/benchmarks.md, seventeenth run). Measured against what the other rules run (H200,
// 2026-12-04, graph ms; eighteenth run): 16 x 4K 0.0623 against 0.0662, 16 x 8K 0.1217 against
// 0.1287, 16 x 16K 0.2387 against 0.2542, 16 x 32K 0.4779 / 0.4757 against the balanced split's
// 0.4810 / 0.4811 (128 blocks on 132 SMs); but 15 x 32K 0.4563 / 0.4539 against the balanced
// split's 0.4513 / 0.4510 and 14 x 32K 0.4298 against 0.4227, where 12 and 20 SMs stay idle, and
// 64 x 8K (four waves) 0.4759 against 0.4745. At 8 x 128K the sequences are longer than a block's
// table.
#pragma once

#include <cstdint>

#include "backend/cuda/decode_partition.h"

namespace se::cuda {

inline constexpr int32_t kDecodeWholeWarps = 8;
inline constexpr int32_t kDecodeWholeMaxLen = 32768;  // keys a block takes at most
// The rule's shortest sequences (max_kv_len rounded as decode_rounded_len): the shortest measured.
inline constexpr int32_t kDecodeWholeMinLen = 4096;
// Block-table entries of one sequence at most: kDecodeWholeMaxLen keys in blocks of 8.
inline constexpr int32_t kDecodeWholeMaxTableEntries = kDecodeWholeMaxLen / kDecodeMinBlockSize;

// Whether a launch of num_seqs sequences of at most max_kv_len keys takes whole sequences on
// num_sms SMs: where its num_seqs * num_kv_heads blocks are one wave that leaves at most a 32nd of
// the SMs idle, and max_kv_len rounds to [kDecodeWholeMinLen, kDecodeWholeMaxLen]. It reads
// max_kv_len rounded as the other rules do, so that a CUDA graph's step and the same step run
// eagerly take the same kernel.
constexpr bool decode_whole_sequences(int32_t num_seqs, int32_t max_kv_len, int32_t num_kv_heads,
                                      int32_t num_sms) {
    if (num_seqs <= 0 || num_kv_heads <= 0 || num_sms <= 0) return false;
    const int64_t blocks = int64_t{num_seqs} * num_kv_heads;
    const int64_t len = decode_rounded_len(max_kv_len);
    return blocks <= num_sms && blocks * 32 >= int64_t{num_sms} * 31 && len >= kDecodeWholeMinLen &&
           len <= kDecodeWholeMaxLen;
}

}  // namespace se::cuda
