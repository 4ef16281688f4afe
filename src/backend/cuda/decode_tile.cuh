// The K and V tiles of decode attention's first pass (decode_attention.cu): the shared-memory
// layout of each warp's ring, the cp.async copies that fill it through the block table, and the
// tensor-core primitives that read it. These helpers keep "memory" clobbers on every asm, because
// the same shared memory is written by cp.async, by plain stores and read by ldmatrix.
//
// Shared memory of a block:
//
//   | warp 0 ring | warp 1 ring | warp 2 ring | warp 3 ring | table (kDecodeMaxTableEntries) |
//     stage 0: K tile, V tile | stage 1 | stage 2
//
// K and V rows are stored with their 16-byte chunks XOR-swizzled by (row % 8), so the 8 rows an
// ldmatrix reads fall into 8 different bank groups. Once every warp has drained its ring, the
// rings hold the warps' results, and then the partials the merging block reads.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/decode_attention.h"

namespace se::cuda::decode {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kTileKeys = 16;  // keys a warp takes per step: n of two score MMAs, k of PV
inline constexpr int kStages = 3;     // tiles per warp ring: two in flight while one is computed
static_assert(kDecodeMinPartition % kTileKeys == 0, "partitions start on tile boundaries");
inline constexpr int kTableEntriesPerThread = kDecodeMaxTableEntries / kThreads;
static_assert(kDecodeMaxTableEntries % kThreads == 0, "threads copy table entries evenly");

// Sizes of one warp's ring, and where chunk `chunk` (8 dims) of row `row` sits in a K or V tile.
template <int kHeadDim>
struct Tile {
    static constexpr int kChunks = kHeadDim / kVecElems;
    static constexpr int kRowBytes = kHeadDim * 2;
    static constexpr int kBytes = kTileKeys * kRowBytes;  // K or V of one tile
    static constexpr int kStageBytes = 2 * kBytes;        // K, then V
    static constexpr int kWarpBytes = kStages * kStageBytes;
    static constexpr int kRingBytes = kWarps * kWarpBytes;           // every warp's ring
    static constexpr int kCopiesPerLane = kTileKeys * kChunks / 32;  // of K, and as many of V
    static constexpr int kRowsPerCopy = 32 / kChunks;                // rows one copy step covers
    static constexpr int kSmemBytes = kRingBytes + kDecodeMaxTableEntries * 4;

    __device__ static uint32_t offset(int row, int chunk) {
        return row * kRowBytes + ((chunk ^ (row % 8)) << 4);
    }
};

__device__ __forceinline__ uint32_t smem_address(const void* ptr) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// 16 bytes from global to shared memory through L2 (not L1), asynchronously; src_bytes 0 writes
// zeros and reads nothing.
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

// What the tile copies of one block need. Key k of the partition is slot offset + k of the
// blocks table[0], table[1], ... (offset > 0 when the partition starts inside a block).
struct TileSource {
    const int32_t* table;  // shared: DecodePartitionBlocks::count block ids
    int32_t num_keys;      // keys of the partition, >= 1
    int32_t offset;        // of the partition's first key in block table[0]
    int32_t kv_head;
    int log_block_size;
};

// Starts the copies of tile `tile` of the partition into the ring stage at shared address
// `stage`. Keys past the partition's end become zero rows (so that 0 * V stays 0), and their
// table entries are not read.
//
// Runs start on tile boundaries (partitions at multiples of 64 keys, balanced ranges at whole
// tiles), so where a block holds at least a tile's keys the tile lies in one block: one table
// entry, and rows a fixed stride apart. Every key computing its own slot instead cost 0.6-3% of
// bench/decode-attention's launches (H200, 2026-12-04): the first pass's rate follows its warps'
// instruction streams as well as its bytes in flight (2 blocks of 4 warps an SM reach 4.5 TB/s,
// 1 block of 4 warps with 5 tiles in flight each 3.8). Which lanes copy which chunks stays as it
// is: 16 lanes a row, so that one copy instruction touches 2 rows; spreading an instruction over 8
// or 16 rows (to copy at fixed offsets) was 21-60% slower (docs/benchmarks.md, seventeenth run).
// A lane's row pointers and shared offsets step by constants from its first row's: 0.15-0.2% more.
template <int kHeadDim>
__device__ __forceinline__ void copy_tile(const DecodeAttentionParams& p, const TileSource& src,
                                          int32_t tile, uint32_t stage) {
    using T = Tile<kHeadDim>;
    const int lane = threadIdx.x % 32;
    const int chunk = lane % T::kChunks;
    if (p.block_size >= kTileKeys) {
        const int32_t first = src.offset + tile * kTileKeys;
        const int64_t slot = int64_t{src.table[first >> src.log_block_size]} * p.block_size +
                             (first & (p.block_size - 1));
        const int row0 = lane / T::kChunks;
        const int64_t row_elems = int64_t{p.num_kv_heads} * kHeadDim;  // one slot to the next
        const int64_t at =
            ((slot + row0) * p.num_kv_heads + src.kv_head) * kHeadDim + chunk * kVecElems;
        const bf16* k = p.k_blocks + at;
        const bf16* v = p.v_blocks + at;
        // Rows past the run's end are still slots of this block: valid addresses, not read.
        const int32_t keys_left = src.num_keys - tile * kTileKeys;
        // T::offset(row0 + i * kRowsPerCopy, chunk): row0 < kRowsPerCopy, a power of two, so
        // (row0 + i * kRowsPerCopy) % 8 == row0 ^ ((i * kRowsPerCopy) % 8).
        const uint32_t lane_dst = stage + row0 * T::kRowBytes;
        const uint32_t swizzle = static_cast<uint32_t>(chunk ^ row0) << 4;
#pragma unroll
        for (int i = 0; i < T::kCopiesPerLane; ++i) {
            const int rows = i * T::kRowsPerCopy;
            const int bytes = row0 + rows < keys_left ? 16 : 0;
            const uint32_t dst = lane_dst + rows * T::kRowBytes + (swizzle ^ ((rows % 8) << 4));
            cp_async_16(dst, k, bytes);
            cp_async_16(dst + T::kBytes, v, bytes);
            k += T::kRowsPerCopy * row_elems;
            v += T::kRowsPerCopy * row_elems;
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < T::kCopiesPerLane; ++i) {
        const int row = lane / T::kChunks + i * T::kRowsPerCopy;
        const int32_t key = tile * kTileKeys + row;
        const bf16* k = p.k_blocks;  // any valid address when nothing is read
        const bf16* v = p.v_blocks;
        int bytes = 0;
        if (key < src.num_keys) {
            const int32_t at_key = src.offset + key;
            const int64_t slot = int64_t{src.table[at_key >> src.log_block_size]} * p.block_size +
                                 (at_key & (p.block_size - 1));
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

}  // namespace se::cuda::decode
