// The TMA tensor maps of the paged K and V caches for the wgmma prefill kernel's TMA producer
// (prefill_producer.cuh), encoded on the host for every launch and passed to the kernel by value
// as a __grid_constant__ parameter.
//
// Each cache is seen as a 2-D bf16 tensor, one row per slot (block * block_size + entry):
//
//   dims     { num_kv_heads * head_dim, num_blocks * block_size }   (innermost first)
//   stride   num_kv_heads * head_dim * 2 bytes between slots
//   box      { 64 dims, tma_box_rows(block_size) slots }, 128-byte swizzle
//
// A box is one 64-dim slab (wgmma_layout.h) of one page (all of it, or half of a 256-entry page),
// at column kv_head * head_dim + 64 * slab. The 128-byte swizzle is the layout the wgmma
// descriptors read, and a box starts on a multiple of 8 rows of its slab, so the copy engine
// writes exactly the table of wgmma_layout.h. Coordinates are signed 32-bit: the cache must hold
// fewer than 2^31 slots (prefill_attention() checks).
#pragma once

#include <cuda.h>  // CUtensorMap; the encoder is reached through cudaGetDriverEntryPointByVersion
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/host_device.h"
#include "backend/cuda/prefill_attention.h"

namespace se::cuda::sm90a {

inline constexpr int32_t kTmaMaxBoxRows = 128;  // one 128-key tile

// Slots per box: one page, or the tile's half of a 256-entry page.
SE_HOST_DEVICE inline int32_t tma_box_rows(int32_t block_size) {
    return block_size < kTmaMaxBoxRows ? block_size : kTmaMaxBoxRows;
}

struct KvTensorMaps {
    CUtensorMap k;  // over k_blocks, bf16 [num_blocks * block_size, num_kv_heads * head_dim]
    CUtensorMap v;  // over v_blocks, the same shape
};

// Encodes both maps for `p` (head_dim 64 or 128, num_blocks * block_size < 2^31, k_blocks and
// v_blocks 16-byte aligned: prefill_attention() checks all three). cudaErrorInvalidValue when the
// driver refuses an encoding, or the driver's error when it has no encoder.
cudaError_t encode_kv_tensor_maps(const PrefillAttentionParams& p, KvTensorMaps& maps);

}  // namespace se::cuda::sm90a
