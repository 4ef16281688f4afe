#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/lse_merge.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMinBlockSize = 8;
constexpr int kUnroll = 4;  // K or V rows each lane has in flight before it uses the first

int32_t num_partitions(int32_t max_kv_len) {
    return std::max(1, (max_kv_len + kDecodePartitionSize - 1) / kDecodePartitionSize);
}

// Where the first pass leaves partition `part` of row (seq, head), and the merge finds it:
//   acc  f32 [num_seqs, num_heads, num_parts, head_dim]
//   max  f32 [num_seqs, num_heads, num_parts]
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

// Lane layout of a warp over K or V rows: kLanesPerRow lanes cover one head_dim row with 16-byte
// loads, so a warp reads kRowsPerWarp rows at once.
template <int kHeadDim>
struct RowLanes {
    static constexpr int kLanesPerRow = kHeadDim / kVecElems;  // 8 or 16
    static constexpr int kRowsPerWarp = 32 / kLanesPerRow;     // 4 or 2
    static constexpr int kRowsPerStep = kWarps * kRowsPerWarp * kUnroll;
    int sub;   // which row of the warp's kRowsPerWarp this lane reads
    int dim0;  // first of this lane's 8 dims

    __device__ RowLanes() {
        const int lane = threadIdx.x % 32;
        sub = lane / kLanesPerRow;
        dim0 = lane % kLanesPerRow * kVecElems;
    }
    // Key u of the current step, relative to the step's first key.
    __device__ int row(int u) const {
        return (u * kWarps + static_cast<int>(threadIdx.x) / 32) * kRowsPerWarp + sub;
    }
};

// First pass: one block per (partition, KV head, sequence); every query head of the group.
template <int kHeadDim, int kGroup>
__global__ void __launch_bounds__(kThreads)
    decode_partition_kernel(DecodeAttentionParams p, int32_t num_parts) {
    using Lanes = RowLanes<kHeadDim>;
    __shared__ float s_scores[kGroup][kDecodePartitionSize];  // scores, then exp(s - max)
    __shared__ float s_acc[kWarps][kGroup][kHeadDim];
    __shared__ int32_t s_blocks[kDecodePartitionSize / kMinBlockSize];

    const int32_t part = blockIdx.x;
    const int32_t kv_head = blockIdx.y;
    const int32_t seq = blockIdx.z;
    const int32_t begin = part * kDecodePartitionSize;  // a multiple of block_size
    const int32_t num_keys = min(p.kv_lens[seq] - begin, kDecodePartitionSize);
    if (num_keys <= 0) return;  // past this sequence's end: the merge never reads this part
    const int32_t group = p.num_heads / p.num_kv_heads;
    const Lanes lanes;
    const int warp = threadIdx.x / 32;

    const int32_t num_part_blocks = (num_keys + p.block_size - 1) / p.block_size;
    for (int32_t i = threadIdx.x; i < num_part_blocks; i += kThreads) {
        s_blocks[i] =
            p.block_tables[int64_t{seq} * p.block_table_stride + begin / p.block_size + i];
    }
    // This lane's 8 dims of every query head of the group, scale folded in.
    float q[kGroup][kVecElems] = {};
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
        if (g >= group) continue;
        load_bf16x8(
            p.q + seq * p.q_row_stride + int64_t{kv_head * group + g} * kHeadDim + lanes.dim0,
            q[g]);
#pragma unroll
        for (int j = 0; j < kVecElems; ++j) q[g][j] *= p.scale;
    }
    __syncthreads();

    // Key `key` of the partition, this lane's 8 dims, in K or V.
    auto row_ptr = [&](const bf16* blocks, int32_t key) {
        const int64_t slot =
            int64_t{s_blocks[key / p.block_size]} * p.block_size + key % p.block_size;
        return blocks + (slot * p.num_kv_heads + kv_head) * kHeadDim + lanes.dim0;
    };

    // Scores: each lane dots its 8 dims, then the kLanesPerRow lanes of a row add up.
    for (int32_t step = 0; step < num_keys; step += Lanes::kRowsPerStep) {
        uint4 raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int32_t key = step + lanes.row(u);
            if (key < num_keys) raw[u] = *reinterpret_cast<const uint4*>(row_ptr(p.k_blocks, key));
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int32_t key = step + lanes.row(u);
            float k[kVecElems] = {};
            if (key < num_keys) bf16x8_to_float(raw[u], k);
#pragma unroll
            for (int g = 0; g < kGroup; ++g) {
                float dot = 0.0f;
#pragma unroll
                for (int j = 0; j < kVecElems; ++j) dot += q[g][j] * k[j];
#pragma unroll
                for (int off = Lanes::kLanesPerRow / 2; off > 0; off /= 2)
                    dot += __shfl_xor_sync(0xffffffffu, dot, off);
                if (g < group && key < num_keys && lanes.dim0 == 0) s_scores[g][key] = dot;
            }
        }
    }
    __syncthreads();

    // Softmax statistics of the partition, one warp per query head.
    const Workspace ws = Workspace::of(p, num_parts);
    for (int g = warp; g < group; g += kWarps) {
        float m = -INFINITY;
        for (int32_t key = threadIdx.x % 32; key < num_keys; key += 32)
            m = fmaxf(m, s_scores[g][key]);
#pragma unroll
        for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        float sum = 0.0f;
        for (int32_t key = threadIdx.x % 32; key < num_keys; key += 32) {
            const float e = expf(s_scores[g][key] - m);
            s_scores[g][key] = e;
            sum += e;
        }
#pragma unroll
        for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (threadIdx.x % 32 == 0) {
            const int64_t at =
                (int64_t{seq} * p.num_heads + kv_head * group + g) * num_parts + part;
            ws.max[at] = m;
            ws.sum[at] = sum;
        }
    }
    __syncthreads();

    // Weighted V: each lane accumulates its 8 dims for every head over its rows.
    float acc[kGroup][kVecElems] = {};
    for (int32_t step = 0; step < num_keys; step += Lanes::kRowsPerStep) {
        uint4 raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int32_t key = step + lanes.row(u);
            if (key < num_keys) raw[u] = *reinterpret_cast<const uint4*>(row_ptr(p.v_blocks, key));
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int32_t key = step + lanes.row(u);
            if (key >= num_keys) continue;
            float v[kVecElems];
            bf16x8_to_float(raw[u], v);
#pragma unroll
            for (int g = 0; g < kGroup; ++g) {
                const float w = g < group ? s_scores[g][key] : 0.0f;
#pragma unroll
                for (int j = 0; j < kVecElems; ++j) acc[g][j] += w * v[j];
            }
        }
    }
    // Add up the rows of a warp (lanes with the same dims), then the warps.
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
#pragma unroll
        for (int j = 0; j < kVecElems; ++j) {
#pragma unroll
            for (int off = Lanes::kLanesPerRow; off < 32; off *= 2)
                acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], off);
            if (lanes.sub == 0) s_acc[warp][g][lanes.dim0 + j] = acc[g][j];
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < group * kHeadDim; i += kThreads) {
        const int g = i / kHeadDim;
        const int d = i % kHeadDim;
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) total += s_acc[w][g][d];
        const int64_t at = (int64_t{seq} * p.num_heads + kv_head * group + g) * num_parts + part;
        ws.acc[at * kHeadDim + d] = total;
    }
}

// Second pass: one block per (head, sequence), one thread per dim.
__global__ void decode_merge_kernel(DecodeAttentionParams p, int32_t num_parts) {
    const int32_t head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int32_t d = threadIdx.x;
    bf16* out = p.out + (int64_t{seq} * p.num_heads + head) * p.head_dim + d;
    const int32_t kv_len = p.kv_lens[seq];
    if (kv_len == 0) {
        *out = __float2bfloat16_rn(0.0f);
        return;
    }
    // kv_len beyond max_kv_len breaks the contract; min() keeps the reads inside the workspace.
    const int32_t seq_parts =
        min((kv_len + kDecodePartitionSize - 1) / kDecodePartitionSize, num_parts);
    const Workspace ws = Workspace::of(p, num_parts);
    const int64_t row = (int64_t{seq} * p.num_heads + head) * num_parts;
    const LseMerge merge = lse_merge(ws.max + row, ws.sum + row, seq_parts);
    float total = 0.0f;
    for (int32_t part = 0; part < seq_parts; ++part)
        total += merge.scale(ws.max[row + part]) * ws.acc[(row + part) * p.head_dim + d];
    *out = __float2bfloat16_rn(total);
}

template <int kHeadDim>
void launch_partition(const DecodeAttentionParams& p, int32_t group, dim3 grid, int32_t num_parts,
                      cudaStream_t stream) {
    if (group == 1) {
        decode_partition_kernel<kHeadDim, 1><<<grid, kThreads, 0, stream>>>(p, num_parts);
    } else if (group == 2) {
        decode_partition_kernel<kHeadDim, 2><<<grid, kThreads, 0, stream>>>(p, num_parts);
    } else if (group <= 4) {
        decode_partition_kernel<kHeadDim, 4><<<grid, kThreads, 0, stream>>>(p, num_parts);
    } else {
        decode_partition_kernel<kHeadDim, 8><<<grid, kThreads, 0, stream>>>(p, num_parts);
    }
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
    const bool pow2 = (p.block_size & (p.block_size - 1)) == 0;
    if (!pow2 || p.block_size < kMinBlockSize || p.block_size > kDecodePartitionSize) {
        return unsupported("decode_attention: block_size " + std::to_string(p.block_size) +
                           " (a power of two in [8, 256])");
    }
    if (p.q_row_stride < int64_t{p.num_heads} * p.head_dim || p.q_row_stride % kVecElems != 0) {
        return invalid_argument("decode_attention: q_row_stride " + std::to_string(p.q_row_stride));
    }
    if (p.num_seqs > 65535) return unsupported("decode_attention: more than 65535 sequences");
    return Status::ok_status();
}

}  // namespace

int64_t decode_attention_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                          int32_t max_kv_len) {
    return int64_t{num_seqs} * num_heads * num_partitions(max_kv_len) * (head_dim + 2);
}

Status decode_attention(const DecodeAttentionParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_params(p));
    if (p.num_seqs == 0) return Status::ok_status();
    const int32_t num_parts = num_partitions(p.max_kv_len);
    const int32_t group = p.num_heads / p.num_kv_heads;
    const dim3 grid(num_parts, p.num_kv_heads, p.num_seqs);
    if (p.head_dim == 64) {
        launch_partition<64>(p, group, grid, num_parts, stream);
    } else {
        launch_partition<128>(p, group, grid, num_parts, stream);
    }
    SE_RETURN_IF_ERROR(launch_status("decode_attention (partitions)"));
    decode_merge_kernel<<<dim3(p.num_heads, p.num_seqs), p.head_dim, 0, stream>>>(p, num_parts);
    return launch_status("decode_attention (merge)");
}

}  // namespace se::cuda
