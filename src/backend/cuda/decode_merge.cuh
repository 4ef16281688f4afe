// The log-sum-exp merge of decode attention's partitions (lse_merge.h has the algebra): where the
// first pass leaves each partition, and the two merges that combine them, one by the last block
// of a (sequence, KV head) to finish (DecodeMerge::kLastBlock) and one by a second kernel.
//
// Both add in one order, so that their outputs are bit-identical. For one query head's row over
// n partitions with maxes m_p, sums s_p and accumulators a_p[d]:
//   M        = max_p m_p
//   total    = the sum over kMergeLanes lanes, lane v holding fmaf-chained terms exp(m_p - M) s_p
//              of p = v, v + kMergeLanes, ...; lanes summed by an xor tree within each group of
//              32, then the 8 group sums in order
//   out[d]   = sum over kMergeChains chains in order, chain c fmaf-chaining f_p a_p[d] over
//              p = c, c + kMergeChains, ..., with f_p = LseMerge{M, 1 / total}.scale(m_p)
// The second kernel runs it with one thread per lane and one warp per chain; the merging block
// (128 threads) takes two lanes per thread and keeps the 8 chains of its dims in registers.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/decode_tile.cuh"
#include "backend/cuda/lse_merge.h"

namespace se::cuda::decode {

inline constexpr int kMergeLanes = 256;  // lanes of each total: the second kernel's threads
inline constexpr int kMergeChains = 8;   // accumulator chains per output: its warps
static_assert(kMergeLanes % kThreads == 0, "a merging block's threads take whole lanes");

// Floats of one workspace row: acc, max, sum and 2 unused, so that rows are 16-byte pieces.
constexpr int32_t decode_row_floats(int32_t head_dim) {
    return head_dim + 4;
}

// Where the first pass leaves partition `part` of the group's query head g, and the merges find
// it: a row of kRowFloats per (sequence, KV head, partition, head of the group),
//   rows f32 [num_seqs, num_kv_heads, num_parts, group, kRowFloats]
//   row: acc [kHeadDim], max (natural-log units, as lse_merge.h expects), sum, 2 floats unused
// so that the partials of one (sequence, KV head) are one run of 16-byte pieces.
template <int kHeadDim>
struct Workspace {
    static constexpr int kRowFloats = decode_row_floats(kHeadDim);
    static constexpr int kMax = kHeadDim;
    static constexpr int kSum = kHeadDim + 1;

    float* base;
    int32_t num_kv_heads;
    int32_t num_parts;
    int32_t group;

    __device__ float* row(int32_t seq, int32_t kv_head, int32_t part, int32_t g) const {
        const int64_t at = ((int64_t{seq} * num_kv_heads + kv_head) * num_parts + part) * group + g;
        return base + at * kRowFloats;
    }
};

// Heads of a group the merging block takes per round: a warp each.
inline constexpr int kMergeRoundHeads = kWarps;

// Bytes of the rows one round of the merging block copies into its rings, at most: num_parts
// partitions of up to kMergeRoundHeads heads.
constexpr int64_t decode_round_rows_bytes(int32_t num_parts, int32_t group, int32_t head_dim) {
    const int32_t heads = group < kMergeRoundHeads ? group : kMergeRoundHeads;
    return int64_t{num_parts} * heads * decode_row_floats(head_dim) * 4;
}

// Whether a round's rows of `parts` partials fit a merging block's drained rings.
constexpr bool decode_round_rows_fit(int32_t parts, int32_t group, int32_t head_dim) {
    const int64_t ring_bytes =
        head_dim == 64 ? Tile<64>::kRingBytes : int64_t{Tile<128>::kRingBytes};
    return decode_round_rows_bytes(parts, group, head_dim) <= ring_bytes;
}

// kv_len clamped into what the grid covers (a kv_len beyond max_kv_len breaks the contract; the
// clamp keeps every block and merge inside the table row and the workspace), and the partitions
// holding its keys.
__device__ __forceinline__ int32_t clamped_kv_len(const DecodeAttentionParams& p, int32_t seq,
                                                  int32_t num_parts) {
    return min(max(p.kv_lens[seq], 0), num_parts * p.partition);
}

__device__ __forceinline__ int32_t seq_partitions(int32_t kv_len, int32_t partition) {
    return (kv_len + partition - 1) / partition;
}

// One lane's term of a total: t + exp(m_p - M) * s_p, rounded once.
__device__ __forceinline__ float lse_term(float t, float partition_max, float partition_sum,
                                          float max) {
    return fmaf(expf(partition_max - max), partition_sum, t);
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) x = x + __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

// The 8 group sums of a total, in order.
__device__ __forceinline__ float sum_in_order(const float (&sums)[kMergeLanes / 32]) {
    float x = sums[0];
#pragma unroll
    for (int i = 1; i < kMergeLanes / 32; ++i) x = x + sums[i];
    return x;
}

// x = src[0 .. N) from shared memory in one access (src is 4N-byte aligned): a warp's 32 accesses
// cover one contiguous row without bank conflicts.
template <int N>
__device__ __forceinline__ void load_lane_dims(const float* src, float (&x)[N]) {
    static_assert(N == 2 || N == 4, "head_dim 64 or 128");
    if constexpr (N == 4) {
        const float4 v = *reinterpret_cast<const float4*>(src);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
        const float2 v = *reinterpret_cast<const float2*>(src);
        x[0] = v.x, x[1] = v.y;
    }
}

// The rows of a merging round's heads (kMergeRoundHeads of them at most) over a sequence's
// partitions live in the drained rings:
//   rows f32 [seq_parts, heads, kRowFloats]
template <int kHeadDim>
struct RoundRows {
    static constexpr int kDim = kHeadDim;
    float* base;
    int32_t heads;

    __device__ const float* row(int32_t part, int32_t h) const {
        return base + (part * heads + h) * Workspace<kHeadDim>::kRowFloats;
    }
};

// Copies the round's rows of one (sequence, KV head) from the workspace, through L2 (never stale
// L1 lines of another SM's writes): part_rows(part) is the row of the group's first head in part
// `part`, the other heads' rows following it. Every thread sees them on return.
template <int kHeadDim, typename PartRows>
__device__ void copy_round_rows(const PartRows& part_rows, int32_t first_head, int32_t seq_parts,
                                const RoundRows<kHeadDim>& r) {
    constexpr int kRowFloats = Workspace<kHeadDim>::kRowFloats;
    constexpr int kPieces = kRowFloats / 4;  // 16-byte pieces of a row
    const int32_t part_pieces = r.heads * kPieces;
    for (int32_t i = threadIdx.x; i < seq_parts * part_pieces; i += kThreads) {
        const int32_t part = i / part_pieces;
        const int32_t piece = i % part_pieces;
        cp_async_16(smem_address(r.base + 4 * i),
                    part_rows(part) + first_head * kRowFloats + 4 * piece, 16);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
}

// Each round head's max (s_max: one per warp) and total (s_sum: one per group of 32 lanes) in the
// merge order; every thread sees them on return. Rows: RoundRows, or any type with its kDim,
// heads and row(part, h) (decode_cluster.cu's rows in the cluster's shared memory).
template <typename Rows>
__device__ void round_totals(const Rows& r, int32_t seq_parts,
                             float (&s_max)[kMergeRoundHeads][kWarps],
                             float (&s_sum)[kMergeRoundHeads][kMergeLanes / 32]) {
    using W = Workspace<Rows::kDim>;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    for (int32_t h = 0; h < r.heads; ++h) {
        float m = -INFINITY;
        for (int32_t i = threadIdx.x; i < seq_parts; i += kThreads)
            m = fmaxf(m, r.row(i, h)[W::kMax]);
        m = warp_max(m);
        if (lane == 0) s_max[h][warp] = m;
    }
    __syncthreads();
    for (int32_t h = 0; h < r.heads; ++h) {
        float max = s_max[h][0];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) max = fmaxf(max, s_max[h][w]);
#pragma unroll
        for (int half = 0; half < kMergeLanes / kThreads; ++half) {
            float t = 0.0f;
            for (int32_t i = threadIdx.x + half * kThreads; i < seq_parts; i += kMergeLanes)
                t = lse_term(t, r.row(i, h)[W::kMax], r.row(i, h)[W::kSum], max);
            t = warp_sum(t);
            if (lane == 0) s_sum[h][warp + half * kWarps] = t;
        }
    }
    __syncthreads();
}

// One warp: the output row of round head h, its dims over the lanes, in kMergeChains chains.
template <typename Rows>
__device__ void merge_head(const Rows& r, int32_t h, int32_t seq_parts, const LseMerge& merge,
                           bf16* out) {
    using W = Workspace<Rows::kDim>;
    constexpr int kLaneDims = Rows::kDim / 32;
    const int lane = threadIdx.x % 32;
    float chain[kMergeChains][kLaneDims] = {};
    for (int32_t first = 0; first < seq_parts; first += kMergeChains) {
#pragma unroll
        for (int c = 0; c < kMergeChains; ++c) {
            if (first + c >= seq_parts) break;
            const float* row = r.row(first + c, h);
            const float f = merge.scale(row[W::kMax]);
            float x[kLaneDims];
            load_lane_dims(row + lane * kLaneDims, x);
#pragma unroll
            for (int e = 0; e < kLaneDims; ++e) chain[c][e] = fmaf(f, x[e], chain[c][e]);
        }
    }
#pragma unroll
    for (int e = 0; e < kLaneDims; ++e) {
        float x = 0.0f;
#pragma unroll
        for (int c = 0; c < kMergeChains; ++c) x = x + chain[c][e];
        out[lane * kLaneDims + e] = __float2bfloat16_rn(x);
    }
}

// Whether this block is the last of the `parts` blocks counted in *counter; if so, every block's
// workspace rows are visible to all of its threads once this returns. The pattern of CUDA's
// threadFenceReduction and of cooperative groups' grid sync: the block's stores, a barrier, then
// one thread's fence (release) and atomic; in the last block, that thread's fence after the
// atomic (acquire) and a barrier before anyone reads.
__device__ inline bool last_block(uint32_t* counter, int32_t parts) {
    __shared__ bool s_last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        const bool last = atomicAdd(counter, 1u) + 1u == static_cast<uint32_t>(parts);
        if (last) {
            __threadfence();
            // Every other block of this (sequence, KV head) has counted already: nobody touches
            // the counter again in this launch, and the next launch finds it zero.
            *counter = 0u;
        }
        s_last = last;
    }
    __syncthreads();
    return s_last;
}

// One round of a block's merge over rows r (every thread of the block calls it): the heads'
// totals, then warp h writes head h's output row, out + h * kDim. The caller's barrier keeps
// the next round's rows and sums from overwriting this one's.
template <typename Rows>
__device__ void merge_round(const Rows& r, int32_t seq_parts, bf16* out) {
    __shared__ float s_max[kMergeRoundHeads][kWarps];
    __shared__ float s_sum[kMergeRoundHeads][kMergeLanes / 32];
    round_totals(r, seq_parts, s_max, s_sum);
    const int32_t h = threadIdx.x / 32;
    if (h >= r.heads) return;
    float max = s_max[h][0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) max = fmaxf(max, s_max[h][w]);
    const LseMerge merge{max, 1.0f / sum_in_order(s_sum[h])};
    merge_head(r, h, seq_parts, merge, out + int64_t{h} * Rows::kDim);
}

// The merge of (seq, kv_head) over its seq_parts partials by the block that stored the last of
// them, after every block's rows are visible to it (last_block), kMergeRoundHeads heads of the
// group at a time, a warp per head for the accumulators; part_rows as copy_round_rows takes it.
// A launch takes this merge only when a round's rows fit the rings (decode_round_rows_fit).
template <int kHeadDim, typename PartRows>
__device__ void merge_in_block(const DecodeAttentionParams& p, const PartRows& part_rows,
                               int32_t group, uint8_t* smem, int32_t seq, int32_t kv_head,
                               int32_t seq_parts) {
    for (int32_t first_head = 0; first_head < group; first_head += kMergeRoundHeads) {
        const RoundRows<kHeadDim> rows{reinterpret_cast<float*>(smem),
                                       min(group - first_head, kMergeRoundHeads)};
        __syncthreads();  // the previous round is done with the rings and the sums
        copy_round_rows(part_rows, first_head, seq_parts, rows);
        const int32_t head = kv_head * group + first_head;
        merge_round(rows, seq_parts, p.out + (int64_t{seq} * p.num_heads + head) * kHeadDim);
    }
}

}  // namespace se::cuda::decode
