// Paged decode attention: a single pass over each partition's keys with an online softmax, then a
// log-sum-exp merge of the partitions (decode_attention.h has the picture; decode_tile.cuh the
// tiles, decode_warp.cuh the tensor-core math, decode_merge.cuh the merges).
//
// First pass, one block of 4 warps per (KV head, sequence, partition). The block copies its
// partition's block-table entries to shared memory while kv_len is still on its way (the entries
// depend on the partition index only; those past the sequence's end are never dereferenced), so
// a block's start waits for one memory latency before its first tile copies, not two. Then every
// warp streams its own 16-key tiles (tiles w, w + 4, w + 8, ... of the partition) through a
// private 3-stage cp.async ring:
//
//   step i: wait for tile i, start the copy of tile i + 2 into the stage tile i - 1 used,
//           then score, softmax-update and accumulate tile i
//
// so K and V of two tiles are in flight while one is computed (16 KB per warp at head_dim 128,
// about 128 KB per SM at 2 blocks/SM), with no block-wide barrier inside the loop. At the end the
// 4 warps merge (max, sum, acc) through shared memory by log-sum-exp; the block writes the output
// rows when its sequence has a single partition, its partial to the workspace otherwise. Where
// the last block merges (DecodeMerge), it then counts itself in merge_counters, and the last block
// of the (sequence, KV head) merges the group's partials and zeroes the counter for the next
// launch.
//
// The block's work on its keys is decode_pass.cuh's, which the balanced split (decode_balanced.cu)
// shares. Second kernel below: one block per (head, sequence) with more than one partition.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/decode_balance.h"
#include "backend/cuda/decode_balanced.h"
#include "backend/cuda/decode_cluster.h"
#include "backend/cuda/decode_merge_rows.cuh"
#include "backend/cuda/decode_pass.cuh"
#include "backend/cuda/decode_whole.h"
#include "backend/cuda/decode_whole_rule.h"

namespace se::cuda::decode {
namespace {

// First pass: one block per (KV head, sequence, partition), KV heads fastest so that the blocks
// reading the same cache blocks run side by side, partitions slowest so that every sequence's
// first partitions start in the first wave and the last ones, often short (a 4K context in
// partitions of 2048 ends in a few dozen keys), fill the slots that are left; every query head of
// the group.
template <int kHeadDim>
__global__ void __launch_bounds__(kThreads, 2)
    decode_partition_kernel(DecodeAttentionParams p, int32_t num_parts, bool merge_here) {
    using T = Tile<kHeadDim>;
    extern __shared__ __align__(128) uint8_t smem[];
    auto* s_table = reinterpret_cast<int32_t*>(smem + T::kRingBytes);
    const int32_t kv_head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int32_t part = blockIdx.z;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t kv_len = clamped_kv_len(p, seq, num_parts);
    const DecodePartitionBlocks blocks = decode_partition_blocks(part, p.partition, p.block_size);
    copy_table<kTableEntriesPerThread>(p, seq, blocks, s_table);
    const int32_t num_keys = min(kv_len - part * p.partition, p.partition);
    if (num_keys <= 0) {
        // Past this sequence's end: no merge waits for this partition. The first writes the zero
        // rows of a sequence without keys, once the kernels before may no longer read them.
        if (kv_len != 0 || part != 0) return;
        pdl_wait();
        store_zeros<kHeadDim>(p, group, seq, kv_head * group, group);
        return;
    }
    // Lengths and tables come from the host's copy, which no kernel writes; q and this step's K
    // and V are the previous kernels' output (pdl.cuh). A partition before its sequence's last
    // holds only keys of earlier steps, which no kernel of this step writes (a step starts after
    // the stream has drained, KV moves run between steps, and a decode step writes only each
    // sequence's newest key, in its last partition), so its first tiles stream while the previous
    // kernel ends.
    const int32_t seq_parts = seq_partitions(kv_len, p.partition);
    const bool early = part < seq_parts - 1;
    const TileSource src{s_table, num_keys, blocks.offset, kv_head, __ffs(p.block_size) - 1};
    attend_run<kHeadDim>(p, smem, src, seq, group, early, /*wait=*/true);
    const Workspace<kHeadDim> ws{p.workspace, p.num_kv_heads, num_parts, group};
    store_run<kHeadDim>(p, smem, group, seq, kv_head,
                        seq_parts == 1 ? nullptr : ws.row(seq, kv_head, part, 0));
    // The next kernel may launch once every block is here, not at their start: CTAs of the
    // following GEMV resident and waiting (pdl.cuh) beside this grid slowed a batch-1 decode step
    // of an 8B model from 4.5 to 6.1-6.2 ms (H200, 2026-12-01).
    pdl_launch_dependents();
    if (seq_parts == 1 || !merge_here) return;
    if (!last_block(p.merge_counters + seq * p.num_kv_heads + kv_head, seq_parts)) return;
    const auto part_rows = [&](int32_t part) { return ws.row(seq, kv_head, part, 0); };
    merge_in_block<kHeadDim>(p, part_rows, group, smem, seq, kv_head, seq_parts);
}

// Second kernel: one block per (head, sequence), merge_rows over the sequence's partitions.
template <int kHeadDim>
__global__ void __launch_bounds__(kMergeLanes)
    decode_merge_kernel(DecodeAttentionParams p, int32_t num_parts) {
    pdl_launch_dependents();
    pdl_wait();  // the first pass's partials
    const int32_t head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int32_t seq_parts = seq_partitions(clamped_kv_len(p, seq, num_parts), p.partition);
    if (seq_parts <= 1) return;  // the first pass wrote this row (zeros when kv_len is 0)
    const int32_t group = p.num_heads / p.num_kv_heads;
    const Workspace<kHeadDim> ws{p.workspace, p.num_kv_heads, num_parts, group};
    const auto row = [&](int32_t part) { return ws.row(seq, head / group, part, head % group); };
    merge_rows<kHeadDim>(seq_parts, row, p.out + (int64_t{seq} * p.num_heads + head) * kHeadDim);
}

// Whether the last block of each (sequence, KV head) merges (DecodeMerge): only when asked, and
// when a round's rows of the launch fit its drained rings (decode_merge.cuh).
bool merges_in_block(const DecodeAttentionParams& p, int32_t num_parts) {
    const bool fits = decode_round_rows_fit(num_parts, p.num_heads / p.num_kv_heads, p.head_dim);
    switch (p.merge) {
        case DecodeMerge::kAuto:
            return false;
        case DecodeMerge::kLastBlock:
            return fits;
        case DecodeMerge::kSecondKernel:
        case DecodeMerge::kCluster:
            return false;
    }
    return false;
}

// Whether the partitions of each (sequence, KV head) run as one cluster (DecodeMerge::kCluster).
bool merges_in_cluster(const DecodeAttentionParams& p, int32_t num_parts) {
    return p.merge == DecodeMerge::kCluster && num_parts >= 2 &&
           num_parts <= kDecodeMaxClusterParts;
}

template <int kHeadDim>
Status launch(const DecodeAttentionParams& p, cudaStream_t stream) {
    const int32_t num_parts = decode_num_partitions(p.max_kv_len, p.partition);
    if (merges_in_cluster(p, num_parts)) return launch_cluster(p, num_parts, stream);
    const bool in_block = merges_in_block(p, num_parts);
    constexpr int kSmem = Tile<kHeadDim>::kSmemBytes;
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        decode_partition_kernel<kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    const dim3 grid(p.num_kv_heads, p.num_seqs, num_parts);
    SE_RETURN_IF_ERROR(
        cuda_status(launch_pdl(decode_partition_kernel<kHeadDim>, grid, dim3(kThreads), kSmem,
                               stream, p, num_parts, in_block),
                    "decode_attention (partitions)"));
    if (num_parts == 1 || in_block) return Status::ok_status();  // every row is written
    return cuda_status(launch_pdl(decode_merge_kernel<kHeadDim>, dim3(p.num_heads, p.num_seqs),
                                  dim3(kMergeLanes), 0, stream, p, num_parts),
                       "decode_attention (merge)");
}

bool power_of_two_in(int32_t x, int32_t lo, int32_t hi) {
    return (x & (x - 1)) == 0 && x >= lo && x <= hi;
}

Status check_balanced(const DecodeAttentionParams& p) {
    if (p.balanced_blocks < 0 || p.balanced_blocks > kDecodeBalancedMaxBlocks) {
        return invalid_argument("decode_attention: balanced_blocks " +
                                std::to_string(p.balanced_blocks) + " (1 .. " +
                                std::to_string(kDecodeBalancedMaxBlocks) + ", or 0)");
    }
    if (p.num_seqs > kDecodeBalancedMaxSeqs) {
        return unsupported("decode_attention: a balanced split of " + std::to_string(p.num_seqs) +
                           " sequences (at most " + std::to_string(kDecodeBalancedMaxSeqs) + ")");
    }
    if (!decode_balanced_fits(p.num_seqs, p.max_kv_len, p.balanced_blocks)) {
        return invalid_argument(
            "decode_attention: balanced_blocks " + std::to_string(p.balanced_blocks) + " for " +
            std::to_string(p.num_seqs) + " sequences of up to " + std::to_string(p.max_kv_len) +
            " keys (ranges of at most " + std::to_string(kDecodeBalancedMaxTiles) + " tiles)");
    }
    if (balanced_merges_in_block(p) && p.merge_counters == nullptr) {
        return invalid_argument("decode_attention: merge_counters is null (a last-block merge)");
    }
    return Status::ok_status();
}

Status check_params(const DecodeAttentionParams& p) {
    if (p.head_dim != 64 && p.head_dim != 128) {
        return unsupported("decode_attention: head_dim " + std::to_string(p.head_dim) +
                           " (built for 64 and 128)");
    }
    if (p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0 ||
        p.num_heads / p.num_kv_heads > kDecodeMaxGroup) {
        return unsupported("decode_attention: " + std::to_string(p.num_heads) + " heads over " +
                           std::to_string(p.num_kv_heads) + " KV heads (groups of at most " +
                           std::to_string(kDecodeMaxGroup) + ")");
    }
    if (!power_of_two_in(p.block_size, kDecodeMinBlockSize, kDecodeMaxBlockSize)) {
        return unsupported("decode_attention: block_size " + std::to_string(p.block_size) +
                           " (a power of two in [8, 256])");
    }
    if (p.q_row_stride < int64_t{p.num_heads} * p.head_dim || p.q_row_stride % kVecElems != 0) {
        return invalid_argument("decode_attention: q_row_stride " + std::to_string(p.q_row_stride));
    }
    if (p.num_seqs > 65535) return unsupported("decode_attention: more than 65535 sequences");
    if (p.max_kv_len < 0) {
        return invalid_argument("decode_attention: max_kv_len " + std::to_string(p.max_kv_len));
    }
    if (p.whole_two_per_sm && !p.whole_sequences) {
        return invalid_argument("decode_attention: whole_two_per_sm without whole_sequences");
    }
    if (p.whole_sequences) {
        if (p.balanced_blocks != 0) {
            return invalid_argument("decode_attention: whole_sequences with balanced_blocks " +
                                    std::to_string(p.balanced_blocks));
        }
        if (p.max_kv_len > kDecodeWholeMaxLen) {
            return unsupported("decode_attention: whole sequences of up to " +
                               std::to_string(p.max_kv_len) + " keys (at most " +
                               std::to_string(kDecodeWholeMaxLen) + ")");
        }
        return Status::ok_status();
    }
    if (p.balanced_blocks != 0) return check_balanced(p);
    if (!power_of_two_in(p.partition, kDecodeMinPartition, kDecodeMaxPartition)) {
        return invalid_argument("decode_attention: partition " + std::to_string(p.partition) +
                                " (a power of two in [64, 2048])");
    }
    const int32_t num_parts = decode_num_partitions(p.max_kv_len, p.partition);
    if (num_parts > 65535) {
        return unsupported("decode_attention: max_kv_len " + std::to_string(p.max_kv_len) +
                           " needs more than 65535 partitions of " + std::to_string(p.partition));
    }
    if (num_parts > 1 && merges_in_block(p, num_parts) && p.merge_counters == nullptr) {
        return invalid_argument("decode_attention: merge_counters is null (a last-block merge)");
    }
    return Status::ok_status();
}

}  // namespace
}  // namespace se::cuda::decode

namespace se::cuda {

DecodeMerge decode_attention_merge(const DecodeAttentionParams& p) {
    if (p.whole_sequences) return DecodeMerge::kAuto;  // nothing to merge
    if (p.balanced_blocks > 0) {
        return decode::balanced_merges_in_block(p) ? DecodeMerge::kLastBlock
                                                   : DecodeMerge::kSecondKernel;
    }
    const int32_t num_parts = decode_num_partitions(p.max_kv_len, p.partition);
    if (decode::merges_in_cluster(p, num_parts)) return DecodeMerge::kCluster;
    return decode::merges_in_block(p, num_parts) ? DecodeMerge::kLastBlock
                                                 : DecodeMerge::kSecondKernel;
}

int64_t decode_attention_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                          int32_t max_kv_len, int32_t partition) {
    return int64_t{num_seqs} * num_heads * decode_num_partitions(max_kv_len, partition) *
           decode::decode_row_floats(head_dim);
}

int64_t decode_balanced_workspace_floats(int32_t num_heads, int32_t head_dim, int32_t blocks) {
    return int64_t{num_heads} * blocks * 2 * decode::decode_row_floats(head_dim);
}

int64_t decode_attention_max_workspace_floats(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                              int32_t max_len, int32_t num_sms) {
    const int64_t partitions = decode_max_partition_rows(max_seqs, max_len) * num_heads *
                               decode::decode_row_floats(head_dim);
    const int64_t balanced = decode_balanced_max_blocks(max_seqs, max_len, num_sms) * num_heads *
                             2 * decode::decode_row_floats(head_dim);
    return std::max(partitions, balanced);
}

Status decode_attention(const DecodeAttentionParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(decode::check_params(p));
    if (p.num_seqs == 0) return Status::ok_status();
    if (p.whole_sequences) return decode::launch_whole(p, stream);
    if (p.balanced_blocks > 0) return decode::launch_balanced(p, stream);
    return p.head_dim == 64 ? decode::launch<64>(p, stream) : decode::launch<128>(p, stream);
}

}  // namespace se::cuda
