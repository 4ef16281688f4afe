// How the wgmma prefill kernel (prefill_attention_sm90a.cu) lays a [rows, head_dim] bf16 tile
// out in shared memory, and the wgmma matrix descriptors that read it. Plain C++ too: the host
// tests check the arithmetic (tests/backend_cuda/host/wgmma_layout_test.cc).
//
// Layout: the tile is cut along head_dim into slabs of 64 elements (128 bytes, one row of the
// 128-byte swizzle); slab s holds every row's dims [64 s, 64 s + 64), row r at r * 128 bytes. A
// slab is rows * 128 bytes and starts on 1024 bytes. In it, 16-byte chunk c of row r (dims
// 8c .. 8c + 7 of the slab) sits at chunk c ^ (r % 8):
//
//   slab 0 (dims 0-63)             slab 1 (dims 64-127)
//   row 0: c0 c1 c2 c3 c4 c5 c6 c7  row 0: ...       8 rows = one 1024-byte swizzle atom
//   row 1: c1 c0 c3 c2 c5 c4 c7 c6
//   row 7: c7 c6 c5 c4 c3 c2 c1 c0
//
// That is the hardware's 128-byte swizzle: the tensor cores (and TMA) XOR address bits [4, 7)
// with bits [7, 10) of each 16-byte access, so a 1024-aligned atom of 8 rows of 128 bytes reads
// back as this table (PTX ISA, "Shared Memory Matrix Layout", 128B swizzling; CUTLASS's
// Swizzle<3,4,3> over Layout_K_SW128_Atom / Layout_MN_SW128_Atom). Same XOR as tile_layout.h,
// but per 64-dim slab instead of over the whole row.
//
// Descriptor (PTX ISA, "Matrix Descriptor Format"; a 64-bit register):
//   bits  0-13  start address >> 4      bits 32-45  stride byte offset (SBO) >> 4
//   bits 16-29  leading byte offset >> 4 bits 49-51  base offset (0: atoms on 1024 bytes)
//   bits 62-63  swizzle: 1 = 128-byte
// Which stride is which (PTX ISA "Strides"; CUTLASS make_gmma_desc, whose canonical layouts in
// 16-byte units are, for the 128-byte swizzle, K-major ((8,m),2):((8,SBO),1) and MN-major
// ((8,n),(8,k)):((1,LBO),(8,SBO))):
//   K-major (Q and K for S = Q K^T: a row of the operand is a row of the tile, K = head_dim runs
//     along it): SBO = 1024, from one 8-row group to the next along M/N; LBO unused (1). A
//     k16 step is 32 bytes along the row: the start address advances by 32 bytes inside a slab
//     (the swizzle XOR is applied to the final address, so the start may sit mid-atom), and by a
//     slab every 4 steps.
//   MN-major (V for O = P V: K = keys are the tile's rows, N = head_dim runs along them):
//     SBO = 1024, from one 8-key group to the next along K; LBO = one slab, from dims
//     [0, 64) to [64, 128) along N. A k16 step is 16 rows: the start advances by 2048 bytes.
#pragma once

#include <cstdint>

#include "backend/cuda/host_device.h"

namespace se::cuda::sm90a {

inline constexpr int kSlabDims = 64;        // bf16 per swizzled row (128 bytes)
inline constexpr int kRowBytes = 128;       // bytes of one row of a slab
inline constexpr int kAtomBytes = 1024;     // 8 rows: the swizzle's repeat, and SBO
inline constexpr int kChunksPerSlab = 8;    // 16-byte chunks per slab row
inline constexpr int kKStepBytes = 32;      // k16 of bf16 along a K-major row
inline constexpr int kMnKStepBytes = 2048;  // k16 rows of an MN-major operand

// Bytes of one slab of a kRows-row tile.
template <int kRows>
inline constexpr int kSlabBytes = kRows* kRowBytes;

// Byte offset, from the tile's start, of 16-byte chunk `chunk` (dims 8 chunk .. 8 chunk + 7) of
// row `row` in a kRows-row tile.
template <int kRows>
SE_HOST_DEVICE inline uint32_t swizzled_offset(int row, int chunk) {
    const int slab = chunk / kChunksPerSlab;
    const int in_slab = chunk % kChunksPerSlab;
    return static_cast<uint32_t>(slab * kSlabBytes<kRows> + row * kRowBytes +
                                 ((in_slab ^ (row % 8)) * 16));
}

// A 128-byte-swizzle descriptor of the operand starting at shared address `addr` (16-byte
// aligned; the atoms it walks start on 1024 bytes of the shared window).
SE_HOST_DEVICE inline uint64_t make_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    const uint64_t start = (addr & 0x3FFFFu) >> 4;
    const uint64_t lbo = (lbo_bytes & 0x3FFFFu) >> 4;
    const uint64_t sbo = (sbo_bytes & 0x3FFFFu) >> 4;
    return start | (lbo << 16) | (sbo << 32) | (uint64_t{1} << 62);
}

// K-major operand (rows of the tile along M or N, head_dim along K).
SE_HOST_DEVICE inline uint64_t k_major_desc(uint32_t addr) {
    return make_desc(addr, 16, kAtomBytes);
}

// MN-major operand of a kRows-row tile (rows along K, head_dim along N).
template <int kRows>
SE_HOST_DEVICE inline uint64_t mn_major_desc(uint32_t addr) {
    return make_desc(addr, kSlabBytes<kRows>, kAtomBytes);
}

// The descriptor of the same operand `bytes` further on (a multiple of 16): the start address
// field is the low 14 bits, and shared addresses stay below 2^18 bytes, so the add cannot carry
// out of it.
SE_HOST_DEVICE inline uint64_t desc_advance(uint64_t desc, uint32_t bytes) {
    return desc + (bytes >> 4);
}

}  // namespace se::cuda::sm90a
