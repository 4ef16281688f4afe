// Paged decode attention: a single pass over each partition's keys with an online softmax, then a
// log-sum-exp merge of the partitions (decode_attention.h has the picture; decode_tile.cuh the
// tiles, decode_warp.cuh the tensor-core math).
//
// First pass, one block of 4 warps per (KV head, partition, sequence). The block copies its
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
// rows when its sequence has a single partition, its partial to the workspace otherwise.
//
// Second kernel, one block per (head, sequence) with more than one partition: the block max and
// total of the partitions, then 8 warps over the partitions and the lanes over the dims.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/decode_warp.cuh"
#include "backend/cuda/lse_merge.h"

namespace se::cuda::decode {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

constexpr int kMergeWarps = 8;

// Where the first pass leaves partition `part` of row (seq, head), and the merge finds it:
//   acc  f32 [num_seqs, num_heads, num_parts, head_dim]
//   max  f32 [num_seqs, num_heads, num_parts]   natural-log units, as lse_merge.h expects
//   sum  f32 [num_seqs, num_heads, num_parts]
struct Workspace {
    float* acc;
    float* max;
    float* sum;

    __host__ __device__ static Workspace of(const DecodeAttentionParams& p, int32_t num_parts) {
        const int64_t rows = int64_t{p.num_seqs} * p.num_heads * num_parts;
        return {p.workspace, p.workspace + rows * p.head_dim,
                p.workspace + rows * (p.head_dim + 1)};
    }
};

// kv_len clamped into what the grid covers (a kv_len beyond max_kv_len breaks the contract; the
// clamp keeps every block and the merge inside the table row and the workspace).
__device__ __forceinline__ int32_t clamped_kv_len(const DecodeAttentionParams& p, int32_t seq,
                                                  int32_t num_parts) {
    return min(max(p.kv_lens[seq], 0), num_parts * p.partition);
}

// The block's warps merged by log-sum-exp: the output rows when the sequence has only this
// partition (direct), the partition's workspace entries otherwise.
template <int kHeadDim>
__device__ void store_partition(const DecodeAttentionParams& p, uint8_t* smem, int32_t group,
                                int32_t num_parts, bool direct) {
    constexpr int kStride = WarpResult<kHeadDim>::kStride;
    const int32_t part = blockIdx.y;
    const int32_t kv_head = blockIdx.x;
    const int32_t seq = blockIdx.z;
    const Workspace ws = Workspace::of(p, num_parts);
    for (int i = threadIdx.x; i < group * kHeadDim; i += kThreads) {
        const int g = i / kHeadDim;
        const int d = i % kHeadDim;
        float max = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) max = fmaxf(max, WarpResult<kHeadDim>::at(smem, w).max[g]);
        float sum = 0.0f;
        float acc = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const WarpResult<kHeadDim> r = WarpResult<kHeadDim>::at(smem, w);
            const float f = exp2f(r.max[g] - max);  // 0 for a warp without keys
            sum += f * r.sum[g];
            acc += f * r.acc[g * kStride + d];
        }
        const int32_t head = kv_head * group + g;
        if (direct) {
            p.out[(int64_t{seq} * p.num_heads + head) * kHeadDim + d] =
                __float2bfloat16_rn(acc / sum);
        } else {
            const int64_t at = (int64_t{seq} * p.num_heads + head) * num_parts + part;
            ws.acc[at * kHeadDim + d] = acc;
            if (d == 0) {
                ws.max[at] = max * kLn2;
                ws.sum[at] = sum;
            }
        }
    }
}

// First pass: one block per (KV head, partition, sequence), KV heads fastest so that the blocks
// reading the same cache blocks run side by side; every query head of the group.
template <int kHeadDim>
__global__ void __launch_bounds__(kThreads, 2)
    decode_partition_kernel(DecodeAttentionParams p, int32_t num_parts) {
    using T = Tile<kHeadDim>;
    extern __shared__ __align__(128) uint8_t smem[];
    auto* s_table = reinterpret_cast<int32_t*>(smem + T::kRingBytes);
    const int32_t kv_head = blockIdx.x;
    const int32_t part = blockIdx.y;
    const int32_t seq = blockIdx.z;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t kv_len = clamped_kv_len(p, seq, num_parts);
    const DecodePartitionBlocks blocks = decode_partition_blocks(part, p.partition, p.block_size);
    const int32_t* table_row = p.block_tables + int64_t{seq} * p.block_table_stride;
    int32_t entries[kTableEntriesPerThread];
#pragma unroll
    for (int j = 0; j < kTableEntriesPerThread; ++j) {  // all loads first, so they overlap
        const int32_t i = threadIdx.x + j * kThreads;
        const bool read = i < blocks.count && blocks.first + i < p.block_table_stride;
        entries[j] = read ? table_row[blocks.first + i] : -1;
    }
#pragma unroll
    for (int j = 0; j < kTableEntriesPerThread; ++j) {
        const int32_t i = threadIdx.x + j * kThreads;
        if (i < blocks.count) s_table[i] = entries[j];
    }
    if (kv_len == 0) {
        if (part != 0) return;
        bf16* out = p.out + (int64_t{seq} * p.num_heads + kv_head * group) * kHeadDim;
        for (int i = threadIdx.x; i < group * kHeadDim; i += kThreads)
            out[i] = __float2bfloat16_rn(0.0f);
        return;
    }
    const int32_t num_keys = min(kv_len - part * p.partition, p.partition);
    if (num_keys <= 0) return;  // past this sequence's end: no merge waits for this partition
    const int warp = threadIdx.x / 32;

    const TileSource src{s_table, num_keys, blocks.offset, kv_head, __ffs(p.block_size) - 1};
    WarpAttention<kHeadDim> w;
    init_warp(p, seq, kv_head, group, w);
    __syncthreads();

    // This warp's tiles are warp, warp + kWarps, ...; tile i of them lives in stage i % kStages.
    const int32_t num_tiles = (num_keys + kTileKeys - 1) / kTileKeys;
    const int32_t my_tiles = warp < num_tiles ? (num_tiles - warp + kWarps - 1) / kWarps : 0;
    const uint32_t ring = smem_address(smem + warp * T::kWarpBytes);
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
        if (i < my_tiles) copy_tile<kHeadDim>(p, src, warp + i * kWarps, ring + i * T::kStageBytes);
        cp_async_commit();
    }
    const float scale_log2 = p.scale * kLog2e;
    for (int32_t i = 0; i < my_tiles; ++i) {
        cp_async_wait<kStages - 2>();  // tile i has landed (for this lane's copies)
        __syncwarp();  // ... for every lane's, and every lane is done with tile i - 1's stage
        const int32_t next = i + kStages - 1;
        if (next < my_tiles) {
            copy_tile<kHeadDim>(p, src, warp + next * kWarps,
                                ring + (next % kStages) * T::kStageBytes);
        }
        cp_async_commit();
        const int32_t tile = warp + i * kWarps;
        attend_tile(w, ring + (i % kStages) * T::kStageBytes, tile * kTileKeys, num_keys,
                    scale_log2);
    }
    cp_async_wait<0>();
    __syncwarp();
    store_warp(w, WarpResult<kHeadDim>::at(smem, warp));
    __syncthreads();
    const int32_t seq_parts = (kv_len + p.partition - 1) / p.partition;
    store_partition<kHeadDim>(p, smem, group, num_parts, seq_parts == 1);
}

// Reduces x over the block with op; every thread gets the result. s_red: one float per warp.
template <typename Op>
__device__ float block_reduce(float x, float* s_red, Op op) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, off));
    if (threadIdx.x % 32 == 0) s_red[threadIdx.x / 32] = x;
    __syncthreads();
    x = s_red[0];
#pragma unroll
    for (int w = 1; w < kMergeWarps; ++w) x = op(x, s_red[w]);
    __syncthreads();  // s_red may be reused
    return x;
}

// Second pass: one block per (head, sequence); partitions over warps, dims over lanes.
template <int kHeadDim>
__global__ void __launch_bounds__(kMergeWarps * 32)
    decode_merge_kernel(DecodeAttentionParams p, int32_t num_parts) {
    constexpr int kLaneDims = kHeadDim / 32;
    __shared__ float s_red[kMergeWarps];
    __shared__ float s_acc[kMergeWarps][kHeadDim];
    const int32_t head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int32_t seq_parts = (clamped_kv_len(p, seq, num_parts) + p.partition - 1) / p.partition;
    if (seq_parts <= 1) return;  // the first pass wrote this row (zeros when kv_len is 0)
    const Workspace ws = Workspace::of(p, num_parts);
    const int64_t row = (int64_t{seq} * p.num_heads + head) * num_parts;

    float max = -INFINITY;
    for (int32_t i = threadIdx.x; i < seq_parts; i += kMergeWarps * 32)
        max = fmaxf(max, ws.max[row + i]);
    max = block_reduce(max, s_red, [](float a, float b) { return fmaxf(a, b); });
    float total = 0.0f;
    for (int32_t i = threadIdx.x; i < seq_parts; i += kMergeWarps * 32)
        total += expf(ws.max[row + i] - max) * ws.sum[row + i];
    total = block_reduce(total, s_red, [](float a, float b) { return a + b; });
    const LseMerge merge{max, 1.0f / total};

    float acc[kLaneDims] = {};
#pragma unroll 4
    for (int32_t part = warp; part < seq_parts; part += kMergeWarps) {
        const float f = merge.scale(ws.max[row + part]);
        const float* src = ws.acc + (row + part) * kHeadDim + lane * kLaneDims;
#pragma unroll
        for (int e = 0; e < kLaneDims; ++e) acc[e] += f * src[e];
    }
#pragma unroll
    for (int e = 0; e < kLaneDims; ++e) s_acc[warp][lane * kLaneDims + e] = acc[e];
    __syncthreads();
    for (int d = threadIdx.x; d < kHeadDim; d += kMergeWarps * 32) {
        float out = 0.0f;
#pragma unroll
        for (int w = 0; w < kMergeWarps; ++w) out += s_acc[w][d];
        p.out[(int64_t{seq} * p.num_heads + head) * kHeadDim + d] = __float2bfloat16_rn(out);
    }
}

template <int kHeadDim>
Status launch(const DecodeAttentionParams& p, cudaStream_t stream) {
    const int32_t num_parts = decode_num_partitions(p.max_kv_len, p.partition);
    constexpr int kSmem = Tile<kHeadDim>::kSmemBytes;
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        decode_partition_kernel<kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    const dim3 grid(p.num_kv_heads, num_parts, p.num_seqs);
    decode_partition_kernel<kHeadDim><<<grid, kThreads, kSmem, stream>>>(p, num_parts);
    SE_RETURN_IF_ERROR(launch_status("decode_attention (partitions)"));
    if (num_parts == 1) return Status::ok_status();  // every row was written by the first pass
    decode_merge_kernel<kHeadDim>
        <<<dim3(p.num_heads, p.num_seqs), kMergeWarps * 32, 0, stream>>>(p, num_parts);
    return launch_status("decode_attention (merge)");
}

bool power_of_two_in(int32_t x, int32_t lo, int32_t hi) {
    return (x & (x - 1)) == 0 && x >= lo && x <= hi;
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
    if (!power_of_two_in(p.partition, kDecodeMinPartition, kDecodeMaxPartition)) {
        return invalid_argument("decode_attention: partition " + std::to_string(p.partition) +
                                " (a power of two in [64, 2048])");
    }
    if (p.q_row_stride < int64_t{p.num_heads} * p.head_dim || p.q_row_stride % kVecElems != 0) {
        return invalid_argument("decode_attention: q_row_stride " + std::to_string(p.q_row_stride));
    }
    if (p.num_seqs > 65535) return unsupported("decode_attention: more than 65535 sequences");
    const int32_t num_parts = decode_num_partitions(p.max_kv_len, p.partition);
    if (num_parts > 65535) {
        return unsupported("decode_attention: max_kv_len " + std::to_string(p.max_kv_len) +
                           " needs more than 65535 partitions of " + std::to_string(p.partition));
    }
    return Status::ok_status();
}

}  // namespace
}  // namespace se::cuda::decode

namespace se::cuda {

int64_t decode_attention_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                          int32_t max_kv_len, int32_t partition) {
    return int64_t{num_seqs} * num_heads * decode_num_partitions(max_kv_len, partition) *
           (head_dim + 2);
}

int64_t decode_attention_max_workspace_floats(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                              int32_t max_len) {
    return decode_max_partition_rows(max_seqs, max_len) * num_heads * (head_dim + 2);
}

Status decode_attention(const DecodeAttentionParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(decode::check_params(p));
    if (p.num_seqs == 0) return Status::ok_status();
    return p.head_dim == 64 ? decode::launch<64>(p, stream) : decode::launch<128>(p, stream);
}

}  // namespace se::cuda
