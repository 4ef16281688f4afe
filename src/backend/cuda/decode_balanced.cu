// Decode attention's balanced split (decode_balance.h): the first pass, one block per (KV head,
// range of the batch's tiles), and the second kernel that merges each sequence's partials where
// the last block does not.
//
// A block finds its range's first sequence by a scan of the batch's tile counts, then attends
// each run of its range (decode_pass.cuh) in turn: the sequences it covers whole go straight to
// the output, its first and last, where it holds only part of them, to its two workspace rows:
//   rows f32 [num_kv_heads, blocks, 2, group, kRowFloats]
//   slot 0: the range's first sequence, when partial; slot 1: its last, when partial and not the
//   first
// Lengths and tables come from the host's copy (pdl.cuh), so the scan runs, and the first run's
// table and first tiles load, while the previous kernel ends, unless that run holds its
// sequence's newest key, which this step's q|k|v kernel writes.
//
// Who merges a sequence's partials (DecodeMerge): a second kernel, one block per (query head,
// sequence), or the last of the sequence's blocks to store its partial, counted in
// merge_counters as the partitions' last-block merge does, where the partials fit a block's
// drained rings (at most 46 blocks a KV head at head_dim 128, 45 at 64); block 0 of each KV head
// then writes the zero rows of the sequences without keys. The last block's merge adds a round
// trip (the count) and the merge itself to the end of the first pass; the second kernel, launched
// early, waits resident for the first pass to end and then needs one round trip, but its blocks,
// one per (query head, sequence) whether the sequence was split or not, come in waves of 4 per SM.
// So kAuto takes the last block where they are more than two waves. Graph ms of a launch at the
// rule's 33 blocks a KV head, last block / second kernel (bench/cuda_decode_attention_bench
// --sweep, H200, 2026-12-02): 16 x 32K 0.4888 / 0.4859 and 64 x 8K 0.4869 / 0.4923 in one run;
// 24 x 16K 0.3631 / 0.3614, 32 x 16K 0.4786 / 0.4775 (1024 merge blocks, 1.9 waves), 48 x 8K
// 0.3620 / 0.3649 (1536, 2.9 waves) and 64 x 8K 0.4757 / 0.4812 in another. Batch-64 decode steps
// of an 8B model: 13.85 / 13.84 ms with the last block's merge, 14.04 / 14.02 without.
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_balance.h"
#include "backend/cuda/decode_balanced.h"
#include "backend/cuda/decode_merge_rows.cuh"
#include "backend/cuda/decode_pass.cuh"

namespace se::cuda::decode {
namespace {

constexpr int kBalancedTablePerThread = (kDecodeBalancedMaxTableEntries + kThreads - 1) / kThreads;
static_assert(kDecodeTileKeys == kTileKeys, "the split's tiles are the kernel's");
static_assert(kDecodeBalancedMaxSeqs <= kMergeLanes, "the merge reads one length per thread");

template <int kHeadDim>
constexpr int balanced_smem_bytes() {
    return Tile<kHeadDim>::kRingBytes + kBalancedTablePerThread * kThreads * 4;
}

__device__ __forceinline__ int32_t balanced_kv_len(const DecodeAttentionParams& p, int32_t seq) {
    return min(max(p.kv_lens[seq], 0), p.max_kv_len);  // keeps every range inside the bound
}

// Where block `b` of `blocks` starts: its range of the batch's tiles (of one KV head), and the
// first sequence with tiles in it.
struct BalancedRange {
    int64_t total = 0;  // tiles of the batch
    int64_t begin = 0;
    int64_t end = 0;
    int32_t seq = 0;        // holds tile `begin` (when begin < end)
    int64_t seq_begin = 0;  // its first tile
};

// x summed over the block's threads (s_warps: one per warp of the block), every thread seeing
// the sum. A second call needs a barrier before it.
__device__ __forceinline__ int64_t block_sum(int64_t x, int64_t* s_warps) {
    const int warp = threadIdx.x / 32;
#pragma unroll
    for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
    if (threadIdx.x % 32 == 0) s_warps[warp] = x;
    __syncthreads();
    int64_t sum = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) sum += s_warps[w];
    return sum;
}

// The block's range: every thread counts the tiles of its run of consecutive sequences, an
// exclusive scan over the threads places the runs, and the thread whose run holds the range's
// first tile walks it to the sequence.
__device__ BalancedRange locate(const DecodeAttentionParams& p, int64_t b, int64_t blocks) {
    __shared__ int64_t s_warps[kWarps];
    __shared__ int32_t s_seq;
    __shared__ int64_t s_seq_begin;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int32_t per_thread = (p.num_seqs + kThreads - 1) / kThreads;
    const int32_t first = threadIdx.x * per_thread;
    const int32_t last = min(first + per_thread, p.num_seqs);
    int64_t mine = 0;
    for (int32_t s = first; s < last; ++s) mine += decode_tiles(balanced_kv_len(p, s));
    int64_t inclusive = mine;  // over the warp's lanes
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
        const int64_t x = __shfl_up_sync(0xffffffffu, inclusive, off);
        if (lane >= off) inclusive += x;
    }
    if (lane == 31) s_warps[warp] = inclusive;
    __syncthreads();
    BalancedRange r;
    int64_t before = inclusive - mine;
    for (int w = 0; w < kWarps; ++w) {
        if (w < warp) before += s_warps[w];
        r.total += s_warps[w];
    }
    const int64_t used = decode_balanced_used_blocks(r.total, blocks);
    if (b < used) {
        r.begin = decode_balanced_start(b, r.total, used);
        r.end = decode_balanced_start(b + 1, r.total, used);
    }
    if (r.begin < r.end && before <= r.begin && r.begin < before + mine) {
        int64_t at = before;
        for (int32_t s = first; s < last; ++s) {
            const int64_t tiles = decode_tiles(balanced_kv_len(p, s));
            if (r.begin < at + tiles) {
                s_seq = s;
                s_seq_begin = at;
                break;
            }
            at += tiles;
        }
    }
    __syncthreads();
    if (r.begin < r.end) {
        r.seq = s_seq;
        r.seq_begin = s_seq_begin;
    }
    return r;
}

// Workspace row of query head g of the group, slot `slot` of block b of KV head kv_head.
template <int kHeadDim>
__device__ __forceinline__ float* balanced_row(const DecodeAttentionParams& p, int32_t kv_head,
                                               int64_t b, int32_t blocks, int32_t slot, int32_t g) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int64_t at = ((int64_t{kv_head} * blocks + b) * 2 + slot) * group + g;
    return p.workspace + at * Workspace<kHeadDim>::kRowFloats;
}

// The last-block merge of a sequence whose partial the block has just stored: tiles
// [seq_begin, seq_end) of the KV head's tiles, held by blocks b_first .. b_last; the last of them
// to store merges their rows (the rows the second kernel reads).
template <int kHeadDim>
__device__ void merge_if_last(const DecodeAttentionParams& p, uint8_t* smem, const BalancedRange& r,
                              int32_t blocks, int32_t seq, int64_t seq_begin, int64_t seq_end,
                              int32_t kv_head) {
    const int64_t used = decode_balanced_used_blocks(r.total, blocks);
    const int64_t b_first = decode_balanced_block_of(seq_begin, r.total, used);
    const int64_t b_last = decode_balanced_block_of(seq_end - 1, r.total, used);
    const auto parts = static_cast<int32_t>(b_last - b_first + 1);
    if (!last_block(p.merge_counters + int64_t{seq} * p.num_kv_heads + kv_head, parts)) return;
    // The first block holds the sequence as its first run only when its range starts with it.
    const int32_t first_slot = decode_balanced_start(b_first, r.total, used) == seq_begin ? 0 : 1;
    const auto part_rows = [&](int32_t i) {
        return balanced_row<kHeadDim>(p, kv_head, b_first + i, blocks, i == 0 ? first_slot : 0, 0);
    };
    merge_in_block<kHeadDim>(p, part_rows, p.num_heads / p.num_kv_heads, smem, seq, kv_head, parts);
}

// Zeros for the output rows of the KV head's group in every sequence without keys (no block's
// range holds them); after the wait.
template <int kHeadDim>
__device__ void store_empty_rows(const DecodeAttentionParams& p, int32_t kv_head) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        if (balanced_kv_len(p, s) == 0) store_zeros<kHeadDim>(p, group, s, kv_head * group, group);
    }
}

template <int kHeadDim>
__global__ void __launch_bounds__(kThreads, 2)
    decode_balanced_kernel(DecodeAttentionParams p, bool merge_here) {
    using T = Tile<kHeadDim>;
    extern __shared__ __align__(128) uint8_t smem[];
    auto* s_table = reinterpret_cast<int32_t*>(smem + T::kRingBytes);
    const int32_t kv_head = blockIdx.x;
    const int32_t b = blockIdx.y;
    const int32_t blocks = gridDim.y;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const BalancedRange r = locate(p, b, blocks);
    bool waited = false;
    int32_t seq = r.seq;
    int64_t seq_begin = r.seq_begin;
    for (int64_t t = r.begin; t < r.end;) {
        const int32_t kv_len = balanced_kv_len(p, seq);
        const int64_t seq_end = seq_begin + decode_tiles(kv_len);
        if (seq_end > t) {
            const int64_t run_end = min(r.end, seq_end);
            const auto key_begin = static_cast<int32_t>((t - seq_begin) * kTileKeys);
            const int32_t num_keys =
                min(kv_len, static_cast<int32_t>((run_end - seq_begin) * kTileKeys)) - key_begin;
            const DecodePartitionBlocks run = run_blocks(key_begin, num_keys, p.block_size);
            copy_table<kBalancedTablePerThread>(p, seq, run, s_table);
            const TileSource src{s_table, num_keys, run.offset, kv_head, __ffs(p.block_size) - 1};
            // A run short of its sequence's last tile holds no key of this step.
            attend_run<kHeadDim>(p, smem, src, seq, group, !waited && run_end < seq_end, !waited);
            waited = true;
            const bool whole = t == seq_begin && run_end == seq_end;
            store_run<kHeadDim>(
                p, smem, group, seq, kv_head,
                whole ? nullptr
                      : balanced_row<kHeadDim>(p, kv_head, b, blocks, t == r.begin ? 0 : 1, 0));
            if (!whole && merge_here) {
                merge_if_last<kHeadDim>(p, smem, r, blocks, seq, seq_begin, seq_end, kv_head);
            }
            t = run_end;
        }
        ++seq;
        seq_begin = seq_end;
    }
    // Every block waits, so that this grid ends after the previous one whatever it held.
    if (!waited) pdl_wait();
    if (merge_here && b == 0) store_empty_rows<kHeadDim>(p, kv_head);
    pdl_launch_dependents();
}

// One block per (head, sequence): the sequence's partials are those of the blocks from the one
// holding its first tile to the one holding its last (none when one block held it all and wrote
// the output; zeros when it has no keys).
template <int kHeadDim>
__global__ void __launch_bounds__(kMergeLanes)
    decode_balanced_merge_kernel(DecodeAttentionParams p, int32_t blocks) {
    __shared__ int64_t s_warps[kMergeLanes / 32];
    pdl_launch_dependents();
    const int32_t head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int32_t group = p.num_heads / p.num_kv_heads;
    int64_t all = 0;
    int64_t before = 0;
    for (int32_t s = threadIdx.x; s < p.num_seqs; s += kMergeLanes) {
        const int64_t tiles = decode_tiles(balanced_kv_len(p, s));
        all += tiles;
        if (s < seq) before += tiles;
    }
    const int64_t total = block_sum(all, s_warps);
    __syncthreads();
    const int64_t first_tile = block_sum(before, s_warps);
    const int32_t tiles = decode_tiles(balanced_kv_len(p, seq));
    pdl_wait();  // the first pass's partials and outputs
    if (tiles == 0) {
        store_zeros<kHeadDim>(p, group, seq, head, 1);
        return;
    }
    const int64_t used = decode_balanced_used_blocks(total, blocks);
    const int64_t b_first = decode_balanced_block_of(first_tile, total, used);
    const int64_t b_last = decode_balanced_block_of(first_tile + tiles - 1, total, used);
    if (b_first == b_last) return;  // the first pass wrote this row
    // The first block holds the sequence as its first run only when its range starts with it.
    const int32_t first_slot = decode_balanced_start(b_first, total, used) == first_tile ? 0 : 1;
    const int32_t kv_head = head / group;
    const auto row = [&](int32_t i) {
        return balanced_row<kHeadDim>(p, kv_head, b_first + i, blocks, i == 0 ? first_slot : 0,
                                      head % group);
    };
    merge_rows<kHeadDim>(static_cast<int32_t>(b_last - b_first + 1), row,
                         p.out + (int64_t{seq} * p.num_heads + head) * kHeadDim);
}

template <int kHeadDim>
Status launch(const DecodeAttentionParams& p, cudaStream_t stream) {
    constexpr int kSmem = balanced_smem_bytes<kHeadDim>();
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        decode_balanced_kernel<kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    const dim3 grid(p.num_kv_heads, p.balanced_blocks);
    const bool in_block = balanced_merges_in_block(p);
    SE_RETURN_IF_ERROR(cuda_status(launch_pdl(decode_balanced_kernel<kHeadDim>, grid,
                                              dim3(kThreads), kSmem, stream, p, in_block),
                                   "decode_attention (balanced ranges)"));
    if (in_block) return Status::ok_status();  // every row is written
    return cuda_status(
        launch_pdl(decode_balanced_merge_kernel<kHeadDim>, dim3(p.num_heads, p.num_seqs),
                   dim3(kMergeLanes), 0, stream, p, p.balanced_blocks),
        "decode_attention (balanced merge)");
}

}  // namespace

bool balanced_merges_in_block(const DecodeAttentionParams& p) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    if (p.merge == DecodeMerge::kSecondKernel ||
        !decode_round_rows_fit(p.balanced_blocks, group, p.head_dim)) {
        return false;
    }
    // kAuto: where the second kernel's blocks (num_heads x num_seqs, 4 resident per SM) outnumber
    // four times the first pass's (2 per SM), i.e. take more than two waves when the first pass
    // takes one (the top of the file has the figures).
    return p.merge == DecodeMerge::kLastBlock ||
           int64_t{group} * p.num_seqs > int64_t{4} * p.balanced_blocks;
}

Status launch_balanced(const DecodeAttentionParams& p, cudaStream_t stream) {
    return p.head_dim == 64 ? launch<64>(p, stream) : launch<128>(p, stream);
}

}  // namespace se::cuda::decode
