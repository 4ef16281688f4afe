// Paged decode attention: one query row per sequence against its whole paged bf16 KV
// (kv_layout.h), split over the KV range and merged by log-sum-exp (lse_merge.h).
//
//   sequence s, kv_len 600, partitions of 256 keys (decode_partition.h picks 64 .. 2048):
//   keys  [0 ........ 256) [256 ...... 512) [512 .. 600)
//          partition 0      partition 1      partition 2      <- one block each, per KV head
//          max, sum, acc    max, sum, acc    max, sum, acc    -> workspace
//                          \        |        /
//          merge: out row of every head of the group, by the block that finished last
//
// A block of the first pass owns one (sequence, KV head, partition) and computes every query head
// of that KV head's GQA group, so each K and V row is read from memory once per group. A sequence
// that fits in one partition skips the workspace: its block writes the output rows. Otherwise the
// last of its blocks to finish merges the group's partitions (DecodeMerge::kLastBlock), or a
// second kernel merges every head (kSecondKernel; DecodeMerge says which launches take which).
//
// Large launches split the other way (balanced_blocks > 0, decode_balance.h): each KV head's keys
// of the whole batch in equal ranges, one block each, which may span sequences; a second kernel
// merges every sequence's partials, or, in launches of many sequences, the last of a sequence's
// blocks to finish. Launches whose (sequence, KV head) pairs fill the SMs once, or twice over
// in one or two waves, split nothing (whole_sequences, decode_whole_rule.h): one block per pair
// (4 warps, one an SM or two an SM), no merge.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "backend/cuda/decode_partition.h"
#include "core/status.h"

namespace se::cuda {

inline constexpr int32_t kDecodeMaxGroup = 8;  // query heads per KV head

// Who merges the partitions of a sequence that has more than one. Both merges add in one order,
// so the choice never changes an output bit (the GPU tests compare them).
enum class DecodeMerge {
    // What the engine runs. Partitions: kSecondKernel. Alone, neither merge was clearly faster
    // (1 x 32K: 0.041 ms with the last block in one run, 0.037 ms with the second kernel in
    // another), but inside a decode step the last-block merge lost: with the next kernel launched
    // early (pdl.cuh), a batch-1 step of an 8B model took 5.7 ms with kLastBlock against 4.5 ms
    // with kSecondKernel (H200, 2026-12-01), so kAuto does not pick it there. The balanced split
    // (balanced_blocks > 0): kLastBlock where the second kernel's blocks would take more than two
    // waves (decode_balanced.cu: balanced_merges_in_block).
    kAuto,
    // The last block to finish a (sequence, KV head), found by merge_counters, wherever the
    // partials fit its shared memory (the launch's partitions, or balanced blocks, of 4 heads of
    // the group at a time: up to 46 at head_dim 128, 45 at 64); else kSecondKernel.
    kLastBlock,
    // A second kernel, one block per (sequence, head).
    kSecondKernel,
    // The partitions of each (sequence, KV head) as one thread-block cluster, whose first block
    // merges the partials from the blocks' shared memory (decode_cluster.cu): no workspace, no
    // second kernel. Where a launch has at most kDecodeMaxClusterParts partitions; else
    // kSecondKernel. The balanced split takes it as kAuto.
    kCluster,
};

// Blocks of a cluster at most (sm_90 allows 16 where the kernel opts in; 8 is portable).
inline constexpr int32_t kDecodeMaxClusterParts = 16;

struct DecodeAttentionParams {
    const bf16* q = nullptr;                // bf16 [num_seqs, q_row_stride], head h at h * head_dim
    const bf16* k_blocks = nullptr;         // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    const bf16* v_blocks = nullptr;         // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    const int32_t* block_tables = nullptr;  // i32 [num_seqs, block_table_stride]
    const int32_t* kv_lens = nullptr;       // i32 [num_seqs], each in [0, max_kv_len]
    bf16* out = nullptr;                    // bf16 [num_seqs, num_heads * head_dim]
    float* workspace = nullptr;             // f32 [decode_attention_workspace_floats(...)], scratch
    // u32 [num_seqs, num_kv_heads]: partitions of each (sequence, KV head) finished so far. All
    // zero on entry, and zero again on exit (the merging block resets its counter), so that memory
    // zeroed once at allocation serves every later launch and graph replay. Launches that share it
    // must run one after another (one stream). Needed wherever the last block merges
    // (decode_attention_merge); may be null otherwise.
    uint32_t* merge_counters = nullptr;
    int64_t q_row_stride = 0;        // elements; >= num_heads * head_dim (a fused qkv row is wider)
    int32_t block_table_stride = 0;  // entries per row of block_tables
    int32_t max_kv_len = 0;          // host-side bound on kv_lens: sizes the grid and the workspace
    int32_t num_seqs = 0;
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;  // divides num_heads, num_heads / num_kv_heads <= kDecodeMaxGroup
    int32_t head_dim = 0;      // 64 or 128
    int32_t block_size = 0;    // a power of two in [kDecodeMinBlockSize, kDecodeMaxBlockSize]
    // Keys per partition: decode_partition_size(num_seqs, max_kv_len), or another power of two in
    // [kDecodeMinPartition, kDecodeMaxPartition] (benchmarks and tests try them all; the
    // workspace must then be sized for it).
    int32_t partition = 0;
    DecodeMerge merge = DecodeMerge::kAuto;
    // Blocks per KV head of the balanced split (decode_balance.h), which then replaces the
    // partitions (partition is not read): decode_balanced_blocks(num_seqs, max_kv_len,
    // num_kv_heads, SMs), or any count whose ranges decode_balanced_fits (tests try many). 0: the
    // partitions. The workspace is decode_balanced_workspace_floats then.
    int32_t balanced_blocks = 0;
    // One block per (sequence, KV head) over the whole sequence (decode_whole_rule.h), which then
    // replaces the partitions and needs no workspace: decode_whole_one_wave(...) or
    // decode_whole_two_per_sm(...) (then with whole_two_per_sm), or any launch
    // with max_kv_len <= kDecodeWholeMaxLen (tests try them). Not with balanced_blocks.
    bool whole_sequences = false;
    // With whole_sequences: two blocks an SM (decode_whole_two_per_sm), instead of one an SM
    // (shared memory the block never uses keeps a second off its SM). Not without it.
    bool whole_two_per_sm = false;
    float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

// Floats of workspace any launch with num_seqs <= max_seqs and max_kv_len <= max_len on num_sms
// SMs needs when it splits by the rules (decode_partition_size, decode_balanced_blocks): what an
// engine allocates once at start-up.
int64_t decode_attention_max_workspace_floats(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                              int32_t max_len, int32_t num_sms);

// Floats of workspace a balanced launch of `blocks` blocks per KV head needs.
int64_t decode_balanced_workspace_floats(int32_t num_heads, int32_t head_dim, int32_t blocks);

// Floats of workspace a launch with these sizes needs.
int64_t decode_attention_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                          int32_t max_kv_len, int32_t partition);

// The merge a launch with these parameters runs for sequences of more than one partition (or
// balanced range): kLastBlock or kSecondKernel (p.merge resolved); kAuto for whole sequences,
// which merge nothing. p must pass decode_attention's checks.
DecodeMerge decode_attention_merge(const DecodeAttentionParams& p);

// out = softmax(q k^T * scale) v over each sequence's kv_len entries; query head h reads KV head
// h / (num_heads / num_kv_heads). Rows of sequences with kv_len 0 are zero.
Status decode_attention(const DecodeAttentionParams& p, cudaStream_t stream);

}  // namespace se::cuda
