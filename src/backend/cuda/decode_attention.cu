// Paged decode attention in two kernels: a single pass over each partition's keys with an online
// softmax, then a log-sum-exp merge of the partitions (decode_attention.h has the picture).
//
// First pass, one block of 4 warps per (KV head, partition, sequence). The block copies the
// partition's block-table entries to shared memory; then every warp streams its own 16-key tiles
// (tiles w, w + 4, w + 8, ... of the partition) through a private 3-stage cp.async ring:
//
//   warp w  | stage 0: K 16 x head_dim, V 16 x head_dim | stage 1 | stage 2 |
//   step i: wait for tile i, start the copy of tile i + 2 into the stage tile i - 1 used,
//           then score, softmax-update and accumulate tile i
//
// so K and V of two tiles are in flight while one is computed (16 KB per warp at head_dim 128,
// about 128 KB per SM at 2 blocks/SM), with no block-wide barrier inside the loop. The math runs on
// the tensor cores (mma.m16n8k16, bf16 in, f32 accumulate), with the GQA group as the 8 useful
// rows:
//
//   scores  S   [heads 16 x keys 8]  = Q [heads x dims] · K^T      (heads 8..15 are zero rows)
//   output  O^T [dims 16 x heads 8] += V^T [dims x keys 16] · P^T  (P from S's registers)
//
// The score fragments of S (head lane/4, keys 2(lane%4) + {0, 1}) are already the B fragments of
// P^T, so probabilities never leave registers. P enters as two bf16 terms (P ≈ hi + lo, relative
// error ~2^-17) so the bf16 tensor-core input costs no accuracy against the f32 reference. Scores
// are kept in log2 units (exp2f); the workspace max is converted back to natural units for the
// merge (lse_merge.h). At the end the 4 warps merge (max, sum, acc) through shared memory by
// log-sum-exp; the block writes its partition to the workspace, or the output rows directly when
// the sequence has a single partition.
//
// Shared memory: K and V rows are stored with their 16-byte chunks XOR-swizzled by (row % 8), so
// the 8 rows an ldmatrix reads fall into 8 different bank groups.
//
// Second pass, one block per (head, sequence) with more than one partition: the block max and
// total of the partitions, then 8 warps over the partitions and the lanes over the dims.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/lse_merge.h"

namespace se::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileKeys = 16;  // keys a warp takes per step: n of two score MMAs, k of the PV MMA
constexpr int kStages = 3;     // tiles per warp ring: two in flight while one is computed
constexpr int kMinBlockSize = 8;
constexpr int kTableEntries = kDecodeMaxPartition / kMinBlockSize;
constexpr int kMergeWarps = 8;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
static_assert(kDecodeMaxGroup == 8, "the group is the n = 8 of the MMAs");
static_assert(kDecodeMinPartition % kTileKeys == 0 && kDecodeMinPartition >= 256,
              "partitions start on block and tile boundaries");

// Sizes of one warp's ring, and where chunk `chunk` (8 dims) of row `row` sits in a K or V tile.
template <int kHeadDim>
struct Tile {
    static constexpr int kChunks = kHeadDim / kVecElems;
    static constexpr int kRowBytes = kHeadDim * 2;
    static constexpr int kBytes = kTileKeys * kRowBytes;  // K or V of one tile
    static constexpr int kStageBytes = 2 * kBytes;        // K, then V
    static constexpr int kWarpBytes = kStages * kStageBytes;
    static constexpr int kCopiesPerLane = kTileKeys * kChunks / 32;  // of K, and as many of V
    static constexpr int kRowsPerCopy = 32 / kChunks;                // rows one copy step covers
    static constexpr int kAccStride =
        kHeadDim + 4;  // floats per head when warps merge: no conflicts
    static constexpr int kSmemBytes = kWarps * kWarpBytes + kTableEntries * 4;
    static_assert((2 + kAccStride) * kDecodeMaxGroup * 4 <= kWarpBytes,
                  "warp results fit the ring");

    __device__ static uint32_t offset(int row, int chunk) {
        return row * kRowBytes + ((chunk ^ (row % 8)) << 4);
    }
};

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

__device__ __forceinline__ uint32_t smem_address(const void* ptr) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// 16 bytes from global to shared memory, asynchronously; src_bytes 0 writes zeros and reads
// nothing.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// c += a · b over one m16n8k16 tile, bf16 inputs, f32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t bf16x2_bits(__nv_bfloat162 v) {
    return *reinterpret_cast<uint32_t*>(&v);
}

// What the tile copies of one block need.
struct TileSource {
    const int32_t* table;  // shared: block ids of the partition's keys
    int32_t num_keys;      // keys of the partition, >= 1
    int32_t kv_head;
    int log_block_size;
};

// Starts the copies of tile `tile` of the partition into the ring stage at shared address
// `stage`. Keys past the partition's end become zero rows, and their table entries are not read.
template <int kHeadDim>
__device__ __forceinline__ void copy_tile(const DecodeAttentionParams& p, const TileSource& src,
                                          int32_t tile, uint32_t stage) {
    using T = Tile<kHeadDim>;
    const int lane = threadIdx.x % 32;
    const int chunk = lane % T::kChunks;
#pragma unroll
    for (int i = 0; i < T::kCopiesPerLane; ++i) {
        const int row = lane / T::kChunks + i * T::kRowsPerCopy;
        const int32_t key = tile * kTileKeys + row;
        const bf16* k = p.k_blocks;  // any valid address when nothing is read
        const bf16* v = p.v_blocks;
        int bytes = 0;
        if (key < src.num_keys) {
            const int64_t slot = int64_t{src.table[key >> src.log_block_size]} * p.block_size +
                                 (key & (p.block_size - 1));
            const int64_t at = (slot * p.num_kv_heads + src.kv_head) * kHeadDim + chunk * kVecElems;
            k += at;
            v += at;
            bytes = 16;
        }
        const uint32_t dst = stage + T::offset(row, chunk);
        cp_async_16(dst, k, bytes);
        cp_async_16(dst + T::kBytes, v, bytes);
    }
}

// One warp's online softmax over its tiles, for the 8 head rows of the group (lane / 4 is the
// head whose max and sum the lane keeps; heads past the group are zero rows nobody reads).
template <int kHeadDim>
struct WarpAttention {
    static constexpr int kDimSteps = kHeadDim / 16;
    uint32_t q[kDimSteps][2];  // bf16x2: Q A fragments, head lane/4, dims 16s + 2(lane%4) (+8)
    float acc[kDimSteps][4];   // O^T fragments: dims 16s + lane/4 (+8), heads 2(lane%4) + {0,1}
    float max = -INFINITY;     // log2 units, head lane/4
    float sum = 0.0f;          // this lane's keys only, head lane/4, relative to max
};

// S = Q K^T for the tile's 16 keys: s[j] holds keys 8j..8j+7; s[j][0..1] are head lane/4 at
// keys 8j + 2(lane%4) + {0, 1}, s[j][2..3] are the zero rows of heads 8..15.
template <int kHeadDim>
__device__ __forceinline__ void score_tile(const WarpAttention<kHeadDim>& w, uint32_t k_tile,
                                           float (&s)[2][4]) {
    using T = Tile<kHeadDim>;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
        // Matrix m of the x4 is keys 8j.., chunk 4c + m: B fragments of dim steps 2c and 2c+1.
#pragma unroll
        for (int c = 0; c < T::kChunks / 4; ++c) {
            uint32_t b[4];
            ldmatrix_x4(k_tile + T::offset(8 * j + lane % 8, 4 * c + lane / 8), b);
            mma_bf16(s[j], w.q[2 * c][0], 0u, w.q[2 * c][1], 0u, b[0], b[1]);
            mma_bf16(s[j], w.q[2 * c + 1][0], 0u, w.q[2 * c + 1][1], 0u, b[2], b[3]);
        }
    }
}

// Scores, softmax update and V accumulation of one tile whose K and V are at k_tile.
template <int kHeadDim>
__device__ __forceinline__ void attend_tile(WarpAttention<kHeadDim>& w, uint32_t k_tile,
                                            int32_t first_key, int32_t num_keys, float scale_log2) {
    using T = Tile<kHeadDim>;
    const int lane = threadIdx.x % 32;
    float s[2][4];
    score_tile(w, k_tile, s);

    // x[2j + i]: key 8j + 2(lane%4) + i of the tile, head lane/4.
    float x[4] = {s[0][0], s[0][1], s[1][0], s[1][1]};
    float tile_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int32_t key = first_key + 8 * (i / 2) + 2 * (lane % 4) + i % 2;
        x[i] = key < num_keys ? x[i] * scale_log2 : -INFINITY;
        tile_max = fmaxf(tile_max, x[i]);
    }
    // The 4 lanes of a head hold its 16 keys; the tile's first key always exists.
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(w.max, tile_max);
    const float alpha = exp2f(w.max - new_max);  // 0 on the first tile
    w.max = new_max;
    float e[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) e[i] = exp2f(x[i] - new_max);
    w.sum = w.sum * alpha + ((e[0] + e[1]) + (e[2] + e[3]));

    // P^T B fragments: keys 2(lane%4) + {0,1} (b0) and 8 + 2(lane%4) + {0,1} (b1), head lane/4,
    // as hi + lo bf16 terms.
    uint32_t hi[2], lo[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(e[2 * j], e[2 * j + 1]);
        hi[j] = bf16x2_bits(h);
        lo[j] = bf16x2_bits(
            __floats2bfloat162_rn(e[2 * j] - __low2float(h), e[2 * j + 1] - __high2float(h)));
    }
    // The accumulator columns of this lane are heads 2(lane%4) and 2(lane%4) + 1.
    const float alpha_even = __shfl_sync(0xffffffffu, alpha, 8 * (lane % 4));
    const float alpha_odd = __shfl_sync(0xffffffffu, alpha, 8 * (lane % 4) + 4);
    const uint32_t v_tile = k_tile + T::kBytes;
#pragma unroll
    for (int d = 0; d < WarpAttention<kHeadDim>::kDimSteps; ++d) {
        w.acc[d][0] *= alpha_even;
        w.acc[d][1] *= alpha_odd;
        w.acc[d][2] *= alpha_even;
        w.acc[d][3] *= alpha_odd;
        // Matrix m of the x4 is keys 8(m/2).., chunk 2d + m%2, transposed: the V^T A fragment.
        const int m = lane / 8;
        uint32_t a[4];
        ldmatrix_x4_trans(v_tile + T::offset(8 * (m / 2) + lane % 8, 2 * d + m % 2), a);
        mma_bf16(w.acc[d], a[0], a[1], a[2], a[3], hi[0], hi[1]);
        mma_bf16(w.acc[d], a[0], a[1], a[2], a[3], lo[0], lo[1]);
    }
}

// Q A fragments of the group (heads past it are zero), accumulators cleared.
template <int kHeadDim>
__device__ __forceinline__ void init_warp(const DecodeAttentionParams& p, int32_t seq,
                                          int32_t kv_head, int32_t group,
                                          WarpAttention<kHeadDim>& w) {
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const bf16* q = p.q + seq * p.q_row_stride +
                    int64_t{kv_head * group + min(g, group - 1)} * kHeadDim + 2 * (lane % 4);
#pragma unroll
    for (int d = 0; d < WarpAttention<kHeadDim>::kDimSteps; ++d) {
        w.q[d][0] = g < group ? *reinterpret_cast<const uint32_t*>(q + 16 * d) : 0u;
        w.q[d][1] = g < group ? *reinterpret_cast<const uint32_t*>(q + 16 * d + 8) : 0u;
        w.acc[d][0] = w.acc[d][1] = w.acc[d][2] = w.acc[d][3] = 0.0f;
    }
}

// One warp's (max, sum, acc) per head, at the start of its ring once the ring is drained:
//   max f32 [8], sum f32 [8], acc f32 [8, kAccStride]
template <int kHeadDim>
struct WarpResult {
    float* max;
    float* sum;
    float* acc;

    __device__ static WarpResult at(uint8_t* smem, int warp) {
        auto* base = reinterpret_cast<float*>(smem + warp * Tile<kHeadDim>::kWarpBytes);
        return {base, base + kDecodeMaxGroup, base + 2 * kDecodeMaxGroup};
    }
};

template <int kHeadDim>
__device__ __forceinline__ void store_warp(const WarpAttention<kHeadDim>& w,
                                           const WarpResult<kHeadDim>& r) {
    constexpr int kStride = Tile<kHeadDim>::kAccStride;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int h = 2 * (lane % 4);
    float sum = w.sum + __shfl_xor_sync(0xffffffffu, w.sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (lane % 4 == 0) {
        r.max[g] = w.max;
        r.sum[g] = sum;
    }
#pragma unroll
    for (int d = 0; d < WarpAttention<kHeadDim>::kDimSteps; ++d) {
        r.acc[h * kStride + 16 * d + g] = w.acc[d][0];
        r.acc[(h + 1) * kStride + 16 * d + g] = w.acc[d][1];
        r.acc[h * kStride + 16 * d + g + 8] = w.acc[d][2];
        r.acc[(h + 1) * kStride + 16 * d + g + 8] = w.acc[d][3];
    }
}

// The block's warps merged by log-sum-exp: the partition's workspace entries, or the output rows
// when the sequence has only this partition.
template <int kHeadDim>
__device__ void store_partition(const DecodeAttentionParams& p, uint8_t* smem, int32_t group,
                                int32_t num_parts, bool direct) {
    constexpr int kStride = Tile<kHeadDim>::kAccStride;
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
    decode_partition_kernel(DecodeAttentionParams p, int32_t partition, int32_t num_parts) {
    using T = Tile<kHeadDim>;
    extern __shared__ __align__(128) uint8_t smem[];
    auto* s_table = reinterpret_cast<int32_t*>(smem + kWarps * T::kWarpBytes);
    const int32_t kv_head = blockIdx.x;
    const int32_t seq = blockIdx.z;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t kv_len = p.kv_lens[seq];
    const int32_t begin = blockIdx.y * partition;  // a multiple of block_size
    if (kv_len == 0) {
        if (blockIdx.y != 0) return;
        bf16* out = p.out + (int64_t{seq} * p.num_heads + kv_head * group) * kHeadDim;
        for (int i = threadIdx.x; i < group * kHeadDim; i += kThreads)
            out[i] = __float2bfloat16_rn(0.0f);
        return;
    }
    const int32_t num_keys = min(kv_len - begin, partition);
    if (num_keys <= 0) return;  // past this sequence's end: the merge never reads this part
    const int warp = threadIdx.x / 32;

    const TileSource src{s_table, num_keys, kv_head, __ffs(p.block_size) - 1};
    const int32_t num_blocks = (num_keys + p.block_size - 1) >> src.log_block_size;
    const int32_t* table =
        p.block_tables + int64_t{seq} * p.block_table_stride + (begin >> src.log_block_size);
    for (int32_t i = threadIdx.x; i < num_blocks; i += kThreads) s_table[i] = table[i];
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
    store_partition<kHeadDim>(p, smem, group, num_parts, kv_len <= partition || num_parts == 1);
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
    decode_merge_kernel(DecodeAttentionParams p, int32_t partition, int32_t num_parts) {
    constexpr int kLaneDims = kHeadDim / 32;
    __shared__ float s_red[kMergeWarps];
    __shared__ float s_acc[kMergeWarps][kHeadDim];
    const int32_t head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    // kv_len beyond max_kv_len breaks the contract; min() keeps the reads inside the workspace.
    const int32_t seq_parts = min((p.kv_lens[seq] + partition - 1) / partition, num_parts);
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
    const int32_t partition = decode_partition_size(p.num_seqs, p.max_kv_len);
    const int32_t num_parts = decode_num_partitions(p.max_kv_len, partition);
    constexpr int kSmem = Tile<kHeadDim>::kSmemBytes;
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        decode_partition_kernel<kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    const dim3 grid(p.num_kv_heads, num_parts, p.num_seqs);
    decode_partition_kernel<kHeadDim><<<grid, kThreads, kSmem, stream>>>(p, partition, num_parts);
    SE_RETURN_IF_ERROR(launch_status("decode_attention (partitions)"));
    if (num_parts == 1) return Status::ok_status();  // every row was written by the first pass
    decode_merge_kernel<kHeadDim>
        <<<dim3(p.num_heads, p.num_seqs), kMergeWarps * 32, 0, stream>>>(p, partition, num_parts);
    return launch_status("decode_attention (merge)");
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
    if (!pow2 || p.block_size < kMinBlockSize || p.block_size > kDecodeMinPartition) {
        return unsupported("decode_attention: block_size " + std::to_string(p.block_size) +
                           " (a power of two in [8, 256])");
    }
    if (p.q_row_stride < int64_t{p.num_heads} * p.head_dim || p.q_row_stride % kVecElems != 0) {
        return invalid_argument("decode_attention: q_row_stride " + std::to_string(p.q_row_stride));
    }
    if (p.num_seqs > 65535) return unsupported("decode_attention: more than 65535 sequences");
    const int32_t partition = decode_partition_size(p.num_seqs, p.max_kv_len);
    if (decode_num_partitions(p.max_kv_len, partition) > 65535) {
        return unsupported("decode_attention: max_kv_len " + std::to_string(p.max_kv_len) +
                           " needs more than 65535 partitions");
    }
    return Status::ok_status();
}

}  // namespace

int64_t decode_attention_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                          int32_t max_kv_len) {
    const int32_t partition = decode_partition_size(num_seqs, max_kv_len);
    return int64_t{num_seqs} * num_heads * decode_num_partitions(max_kv_len, partition) *
           (head_dim + 2);
}

int64_t decode_attention_max_workspace_floats(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                              int32_t max_len) {
    return decode_max_partition_rows(max_seqs, max_len) * num_heads * (head_dim + 2);
}

Status decode_attention(const DecodeAttentionParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_params(p));
    if (p.num_seqs == 0) return Status::ok_status();
    return p.head_dim == 64 ? launch<64>(p, stream) : launch<128>(p, stream);
}

}  // namespace se::cuda
