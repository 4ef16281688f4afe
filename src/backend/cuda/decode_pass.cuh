// One block of decode attention's first pass over one run of a sequence's keys (decode_attention.cu
// has the picture): the block-table entries into shared memory, every warp's 16-key tiles through
// its cp.async ring with an online softmax, and the warps' log-sum-exp merge into an output row or
// a partial. Both splits run it: a partition (decode_attention.cu) and a balanced range
// (decode_balanced.cu), which may take several runs one after another.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/decode_merge.cuh"
#include "backend/cuda/decode_warp.cuh"
#include "backend/cuda/pdl.cuh"

namespace se::cuda::decode {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

// Copies entries [blocks.first, blocks.first + blocks.count) of the sequence's block-table row
// into s_table, whatever kv_len is (issued before the caller's first use of it, so that the loads
// overlap): entries past the sequence's end are never dereferenced, and those past the row's end
// are not read. kPerThread * kBlockThreads >= blocks.count. Visible after a barrier.
template <int kPerThread, int kBlockThreads = kThreads>
__device__ __forceinline__ void copy_table(const DecodeAttentionParams& p, int32_t seq,
                                           const DecodePartitionBlocks& blocks, int32_t* s_table) {
    const int32_t* table_row = p.block_tables + int64_t{seq} * p.block_table_stride;
    int32_t entries[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {  // all loads first, so they overlap
        const int32_t i = threadIdx.x + j * kBlockThreads;
        const bool read = i < blocks.count && blocks.first + i < p.block_table_stride;
        entries[j] = read ? table_row[blocks.first + i] : -1;
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
        const int32_t i = threadIdx.x + j * kBlockThreads;
        if (i < blocks.count) s_table[i] = entries[j];
    }
}

// The block-table entries of keys [key_begin, key_begin + num_keys) of a sequence in blocks of
// block_size (a power of two): the run's first key at `offset` inside block `first`.
__device__ __forceinline__ DecodePartitionBlocks run_blocks(int32_t key_begin, int32_t num_keys,
                                                            int32_t block_size) {
    const int32_t first = key_begin / block_size;
    const int32_t offset = key_begin % block_size;
    return {first, (offset + num_keys + block_size - 1) / block_size, offset};
}

// Attends keys [0, src.num_keys) of the run src describes (src.num_keys >= 1, its table being
// copied into src.table by copy_table) for every query head of KV head kv_head's group, into the
// warps' results (WarpResult) in shared memory; every thread sees them on return. `early`: the run
// holds no key this step writes, so its first tiles are copied before `wait` (pdl_wait, when the
// block has not waited yet) lets q and the newest keys be read. kBlockWarps: the block's warps.
template <int kHeadDim, int kBlockWarps = kWarps>
__device__ void attend_run(const DecodeAttentionParams& p, uint8_t* smem, const TileSource& src,
                           int32_t seq, int32_t group, bool early, bool wait) {
    using T = Tile<kHeadDim>;
    const int warp = threadIdx.x / 32;
    // This warp's tiles are warp, warp + kBlockWarps, ...; tile i of them lives in stage
    // i % kStages.
    const int32_t num_tiles = (src.num_keys + kTileKeys - 1) / kTileKeys;
    const int32_t my_tiles =
        warp < num_tiles ? (num_tiles - warp + kBlockWarps - 1) / kBlockWarps : 0;
    const uint32_t ring = smem_address(smem + warp * T::kWarpBytes);
    const auto copy_first_tiles = [&] {
#pragma unroll
        for (int i = 0; i < kStages - 1; ++i) {
            if (i < my_tiles)
                copy_tile<kHeadDim>(p, src, warp + i * kBlockWarps, ring + i * T::kStageBytes);
            cp_async_commit();
        }
    };
    if (early) {
        __syncthreads();  // s_table
        copy_first_tiles();
    }
    if (wait) pdl_wait();
    WarpAttention<kHeadDim> w;
    init_warp(p, seq, src.kv_head, group, w);
    __syncthreads();  // s_table
    if (!early) copy_first_tiles();
    const float scale_log2 = p.scale * kLog2e;
    for (int32_t i = 0; i < my_tiles; ++i) {
        cp_async_wait<kStages - 2>();  // tile i has landed (for this lane's copies)
        __syncwarp();  // ... for every lane's, and every lane is done with tile i - 1's stage
        const int32_t next = i + kStages - 1;
        if (next < my_tiles) {
            copy_tile<kHeadDim>(p, src, warp + next * kBlockWarps,
                                ring + (next % kStages) * T::kStageBytes);
        }
        cp_async_commit();
        const int32_t tile = warp + i * kBlockWarps;
        attend_tile(w, ring + (i % kStages) * T::kStageBytes, tile * kTileKeys, src.num_keys,
                    scale_log2);
    }
    cp_async_wait<0>();
    __syncwarp();
    store_warp(w, WarpResult<kHeadDim>::at(smem, warp));
    __syncthreads();
}

// The block's warps merged by log-sum-exp (attend_run's results): the output rows of the group's
// heads when `rows` is null (the run is the whole sequence), else its partials, rows[g] at
// rows + g * Workspace::kRowFloats. kBlockWarps: the block's warps.
template <int kHeadDim, int kBlockWarps = kWarps>
__device__ void store_run(const DecodeAttentionParams& p, uint8_t* smem, int32_t group, int32_t seq,
                          int32_t kv_head, float* rows) {
    using W = Workspace<kHeadDim>;
    constexpr int kStride = WarpResult<kHeadDim>::kStride;
    for (int i = threadIdx.x; i < group * kHeadDim; i += kBlockWarps * 32) {
        const int g = i / kHeadDim;
        const int d = i % kHeadDim;
        float max = -INFINITY;
#pragma unroll
        for (int w = 0; w < kBlockWarps; ++w) {
            max = fmaxf(max, WarpResult<kHeadDim>::at(smem, w).max[g]);
        }
        float sum = 0.0f;
        float acc = 0.0f;
#pragma unroll
        for (int w = 0; w < kBlockWarps; ++w) {
            const WarpResult<kHeadDim> r = WarpResult<kHeadDim>::at(smem, w);
            const float f = exp2f(r.max[g] - max);  // 0 for a warp without keys
            sum += f * r.sum[g];
            acc += f * r.acc[g * kStride + d];
        }
        if (rows == nullptr) {
            const int32_t head = kv_head * group + g;
            p.out[(int64_t{seq} * p.num_heads + head) * kHeadDim + d] =
                __float2bfloat16_rn(acc / sum);
        } else {
            float* row = rows + g * W::kRowFloats;
            row[d] = acc;
            if (d == 0) {
                row[W::kMax] = max * kLn2;
                row[W::kSum] = sum;
            }
        }
    }
}

// Zeros for the output rows of the group's heads (a sequence without keys).
template <int kHeadDim>
__device__ void store_zeros(const DecodeAttentionParams& p, int32_t group, int32_t seq,
                            int32_t first_head, int32_t heads) {
    bf16* out = p.out + (int64_t{seq} * p.num_heads + first_head) * kHeadDim;
    for (int i = threadIdx.x; i < heads * kHeadDim; i += blockDim.x)
        out[i] = __float2bfloat16_rn(0.0f);
}

}  // namespace se::cuda::decode
