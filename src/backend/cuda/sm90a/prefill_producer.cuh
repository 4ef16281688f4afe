// The producer warpgroup of the wgmma prefill kernel (prefill_attention_sm90a.cu): its 128
// threads copy the CTA's Q rows once, then every KV tile's K and V into the rings of
// prefill_smem.cuh, into the 128-byte-swizzled slabs of wgmma_layout.h, in one of two ways:
//
//  * cp.async, 16 bytes per thread and copy: a thread's copies signal a full barrier through
//    cp.async.mbarrier.arrive.noinc (the barriers count the 128 producer threads), so the threads
//    never wait for their own copies. The zero-fill of cp.async gives the rows past the last
//    visible key as zeros, with a page lookup per row: P V multiplies those rows by zero weights,
//    and 0 * NaN is NaN, so they must be zeros, not whatever the last page (or an unowned one)
//    holds. The cost is 32 copy instructions per thread and tile (a tile is 64 KiB at head_dim
//    128, and takes the consumers ~4000 cycles), plus their address arithmetic.
//  * TMA (the TMA variant, kv_tensor_maps.h), for the tiles whose 128 keys are all visible to
//    some row of the CTA (every tile but a partial last one): lane b of warp 0 loads box b, one
//    64-dim slab of one page; lane 0 first announces the tile's bytes on the full barrier, and
//    the other 127 producer threads arrive plainly, so the barrier counts 128 arrivals either
//    way. Every key of such a tile is below end_key <= kv_len: its pages are owned and written.
//    The partial last tile (and Q) still goes by cp.async, for the zeros above.
//
// Copy plan of cp.async, per 128-row tile (Q or K or V): thread t takes 16-byte chunk t % C
// (C = head_dim / 8 chunks per row) of rows t / C + pass * (128 / C). The 128 / C (8 or 16) rows
// of a pass are whole rows, so each row's 2 x 128 bytes (head_dim 128) are read by consecutive
// threads, and a multiple of 8 rows apart, so a thread's swizzle (chunk ^ row % 8) is the same in
// every pass.
//
// Page lookups: lane l of each producer warp reads the block table entry of the tile's l-th page
// (one load per lane and tile; a tile has at most 16 pages), and the lanes pick each row's (or
// box's) block from it with a shuffle, instead of one table load per row.
#pragma once

#include <cstdint>

#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/sm90a/barriers.cuh"
#include "backend/cuda/sm90a/kv_tensor_maps.h"
#include "backend/cuda/sm90a/prefill_smem.cuh"
#include "backend/cuda/sm90a/tma.cuh"
#include "backend/cuda/sm90a/wgmma_layout.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda::sm90a {

template <int kHeadDim>
struct CopyPlan {
    static constexpr int kChunks = kHeadDim / 8;                      // 16-byte chunks per row
    static constexpr int kRowsPerPass = kWarpgroupThreads / kChunks;  // 8 or 16
    static constexpr int kPasses = kTileRows / kRowsPerPass;          // 16 or 8
    static_assert(kRowsPerPass % 8 == 0, "a pass must keep each thread's row % 8");

    int chunk;      // this thread's chunk of every row it copies
    int first_row;  // its row in pass 0; pass p adds p * kRowsPerPass
    uint32_t dst;   // byte offset of (first_row, chunk) in the tile

    __device__ explicit CopyPlan(int thread)
        : chunk(thread % kChunks),
          first_row(thread / kChunks),
          dst(swizzled_offset<kTileRows>(thread / kChunks, thread % kChunks)) {}

    __device__ int row(int pass) const { return first_row + pass * kRowsPerPass; }
    // Rows of a pass are a multiple of 8 apart: same swizzle, 128 bytes per row further on.
    __device__ uint32_t dst_at(int pass) const {
        return dst + static_cast<uint32_t>(pass * kRowsPerPass * kRowBytes);
    }
};

// Where one KV head's entries of one sequence sit in the paged cache.
struct KvPages {
    const int32_t* table;  // i32 [ceil(kv_len / block_size)], the sequence's block ids
    int32_t block_shift;   // log2(block_size)
    int64_t entry_elems;   // num_kv_heads * head_dim: elements between consecutive slots
    int64_t head_offset;   // kv_head * head_dim
};

// This lane's block table entry for the KV tile from `first_key`: page (first_key >> shift) + lane,
// or 0 when that page holds no key below end_key (its entry may not exist: tables are padded with
// -1, and reading past them is reading what the sequence does not own).
__device__ __forceinline__ int32_t tile_page_entry(const KvPages& src, int32_t first_key,
                                                   int32_t end_key) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int32_t page = (first_key >> src.block_shift) + lane;
    const int32_t num_pages = kTileRows >> src.block_shift;  // 0 for 256-key pages: one page
    const bool needed = (lane < num_pages || lane == 0) && (page << src.block_shift) < end_key;
    return needed ? __ldg(src.table + page) : 0;
}

// Keys [first_key, first_key + 128) of `cache` (K or V) into the tile at shared address `tile`,
// zeros from end_key on. `entry` is this lane's tile_page_entry. Every lane of the warp runs the
// shuffles, valid row or not.
template <int kHeadDim>
__device__ __forceinline__ void copy_kv_tile(uint32_t tile, const bf16* cache, const KvPages& src,
                                             int32_t entry, int32_t first_key, int32_t end_key) {
    const CopyPlan<kHeadDim> plan(static_cast<int>(threadIdx.x % kWarpgroupThreads));
    const int32_t first_page = first_key >> src.block_shift;
    const int32_t key_mask = (1 << src.block_shift) - 1;
#pragma unroll 4
    for (int pass = 0; pass < CopyPlan<kHeadDim>::kPasses; ++pass) {
        const int32_t key = first_key + plan.row(pass);
        // In [0, 16): a tile's keys span at most 16 pages from its first.
        const int32_t block =
            __shfl_sync(0xffffffffu, entry, (key >> src.block_shift) - first_page);
        const bool valid = key < end_key;
        const bf16* from = cache;  // a mapped address, never read when !valid
        if (valid) {
            const int64_t slot = (int64_t{block} << src.block_shift) | (key & key_mask);
            from = cache + slot * src.entry_elems + src.head_offset + plan.chunk * 8;
        }
        cp_async_16(tile + plan.dst_at(pass), from, valid);
    }
}

// Keys [first_key, first_key + 128) of the cache behind `map` (K or V) into the tile at shared
// address `tile` by TMA, completing on `full`: every key below end_key (a full tile). `entry` is
// this lane's tile_page_entry. Every producer thread calls this once per tile (it is one of the
// barrier's 128 arrivals); warp 0 loads, lane b the b-th box: page b / kSlabs of the tile, slab
// b % kSlabs.
template <int kHeadDim>
__device__ __forceinline__ void tma_kv_tile(uint32_t tile, const CUtensorMap* map,
                                            const KvPages& src, int32_t entry, int32_t first_key,
                                            uint32_t full) {
    constexpr int kSlabs = kHeadDim / kSlabDims;
    constexpr uint32_t kBytes = kTileRows * kHeadDim * 2;
    const int lane = static_cast<int>(threadIdx.x % 32);
    const bool loader = threadIdx.x % kWarpgroupThreads < 32;  // warp 0 of the producer
    const int32_t box_rows = tma_box_rows(1 << src.block_shift);
    const int page = lane / kSlabs;
    const int slab = lane % kSlabs;
    // Lane p of the warp holds page p's entry; every lane runs the shuffle, loader or not.
    const int32_t block = __shfl_sync(0xffffffffu, entry, page % 16);
    if (!loader) {
        mbarrier_arrive(full);
        return;
    }
    if (lane == 0) mbarrier_arrive_expect_tx(full, kBytes);
    __syncwarp();  // the bytes are announced before any box can land
    if (page * box_rows < kTileRows) {
        const int32_t key = first_key + page * box_rows;
        const int32_t slot = (block << src.block_shift) | (key & ((1 << src.block_shift) - 1));
        const int32_t col = static_cast<int32_t>(src.head_offset) + slab * kSlabDims;
        const uint32_t dst = tile + static_cast<uint32_t>(slab * kSlabBytes<kTileRows> +
                                                          page * box_rows * kRowBytes);
        tma_load_2d(dst, map, col, slot, full);
    }
    if (lane != 0) mbarrier_arrive(full);
}

// The CTA's packed query rows (prefill_tiles.h) into the Q tile; rows past num_rows are zeros.
template <int kHeadDim>
__device__ __forceinline__ void copy_q_tile(uint32_t tile, const PrefillAttentionParams& p,
                                            const CtaWork& w) {
    const CopyPlan<kHeadDim> plan(static_cast<int>(threadIdx.x % kWarpgroupThreads));
#pragma unroll 4
    for (int pass = 0; pass < CopyPlan<kHeadDim>::kPasses; ++pass) {
        const int row = plan.row(pass);
        const bool valid = row < w.range.num_rows;
        const bf16* from = p.q;
        if (valid) {
            const int32_t packed = w.range.first_row + row;
            const int32_t head = w.kv_head * w.group + packed % w.group;
            from = p.q + (int64_t{w.q_start} + packed / w.group) * p.q_row_stride +
                   int64_t{head} * kHeadDim + plan.chunk * 8;
        }
        cp_async_16(tile + plan.dst_at(pass), from, valid);
    }
}

// The producer's whole job: Q, then K(t) and V(t) for every KV tile t the CTA reads, each into
// its ring slot once both consumers have released the slot's previous tile. kTma: the tiles
// before w.first_copied_tile by TMA (tma_kv_tile), the rest by cp.async. Smem is a PrefillSmem.
template <int kHeadDim, bool kTma, class Smem>
__device__ __forceinline__ void run_producer(const PrefillAttentionParams& p, const Smem& s,
                                             const CtaWork& w, const KvTensorMaps& maps) {
    constexpr int kK = Smem::kKStages;
    constexpr int kV = Smem::kVStages;
    const KvPages src{p.block_tables + int64_t{w.seq} * p.block_table_stride,
                      __ffs(p.block_size) - 1, int64_t{p.num_kv_heads} * kHeadDim,
                      int64_t{w.kv_head} * kHeadDim};
    if constexpr (kTma) {
        if (threadIdx.x % kWarpgroupThreads == 0) {
            prefetch_tensor_map(&maps.k);
            prefetch_tensor_map(&maps.v);
        }
    }
    copy_q_tile<kHeadDim>(s.q(), p, w);
    cp_async_arrive_noinc(s.q_full());
#pragma unroll 1
    for (int32_t t = 0; t < w.range.num_kv_tiles; ++t) {
        const int32_t first_key = t * kWgmmaTileKeys;
        const int32_t entry = tile_page_entry(src, first_key, w.range.end_key);
        const bool by_tma = kTma && t < w.first_copied_tile;
        const int k_slot = ring_slot<kK>(t);
        mbarrier_wait(s.k_empty(k_slot), ring_empty_parity<kK>(t));
        if (by_tma) {
            tma_kv_tile<kHeadDim>(s.k(k_slot), &maps.k, src, entry, first_key, s.k_full(k_slot));
        } else {
            copy_kv_tile<kHeadDim>(s.k(k_slot), p.k_blocks, src, entry, first_key, w.range.end_key);
            cp_async_arrive_noinc(s.k_full(k_slot));
        }
        const int v_slot = ring_slot<kV>(t);
        mbarrier_wait(s.v_empty(v_slot), ring_empty_parity<kV>(t));
        if (by_tma) {
            tma_kv_tile<kHeadDim>(s.v(v_slot), &maps.v, src, entry, first_key, s.v_full(v_slot));
        } else {
            copy_kv_tile<kHeadDim>(s.v(v_slot), p.v_blocks, src, entry, first_key, w.range.end_key);
            cp_async_arrive_noinc(s.v_full(v_slot));
        }
    }
    // The consumers wait for every copy before they finish; this thread need not outlive its
    // copies, but waiting here costs nothing and keeps them from landing after it is gone.
    cp_async_wait_all();
}

}  // namespace se::cuda::sm90a
