// How a [rows, head_dim] bf16 tile sits in shared memory for ldmatrix, and which thread of a CTA
// copies which 16-byte chunk of it with cp.async. Shared by the prefill kernel and the host tests
// (plain C++ too).
//
// A row is head_dim / 8 chunks of 16 bytes. Chunk c of row r is stored at chunk c ^ (r % 8) of
// that row, so the 8 rows that one ldmatrix 8x8 matrix reads at the same logical chunk fall in 8
// different 16-byte bank groups (no bank conflict), and every copy stays 16-byte aligned:
//
//   logical chunk   0  1  2  3  4  5  6  7 | 8 ...
//   row 0 stores    0  1  2  3  4  5  6  7 | 8 ...
//   row 1 stores    1  0  3  2  5  4  7  6 | 9 ...
//   row 3 stores    3  2  1  0  7  6  5  4 | 11 ...
//
// Copies: thread t takes chunk t % chunks of rows t / chunks + pass * (threads / chunks), so the
// threads of one pass cover whole rows and each row's global read is contiguous.
#pragma once

#include <cstdint>

#include "backend/cuda/host_device.h"

namespace se::cuda {

// Element offset of logical chunk `chunk` of row `row` in a tile of rows of kHeadDim bf16.
template <int kHeadDim>
SE_HOST_DEVICE inline int tile_offset(int row, int chunk) {
    return row * kHeadDim + ((chunk ^ (row & 7)) * 8);
}

// The byte address of (row, chunk + even) from `addr`, the byte address of (row, chunk), for
// chunk in {0, 1}, `even` an even compile-time step, and a tile starting on 128 bytes. The
// swizzle XORs the low 3 chunk bits with the row, and chunk + even = chunk ^ even below 8, so a
// step is an XOR on address bits 4-6 and an add above them: the MMA loops keep one address per
// lane and matrix instead of one per unrolled k-step (which spilled registers).
SE_HOST_DEVICE inline uint32_t tile_addr_advance(uint32_t addr, int even) {
    return (addr ^ static_cast<uint32_t>((even & 7) * 16)) + static_cast<uint32_t>(even & ~7) * 16;
}

// Which (row, chunk) of a kRows-row tile thread `thread` of kThreads copies in pass `pass`.
template <int kHeadDim, int kThreads, int kRows>
struct TileCopyPlan {
    static constexpr int kChunks = kHeadDim / 8;
    static constexpr int kRowsPerPass = kThreads / kChunks;
    static constexpr int kPasses = kRows / kRowsPerPass;
    static_assert(kThreads % kChunks == 0 && kRows % kRowsPerPass == 0);

    SE_HOST_DEVICE static int row(int thread, int pass) {
        return thread / kChunks + pass * kRowsPerPass;
    }
    SE_HOST_DEVICE static int chunk(int thread) { return thread % kChunks; }
};

}  // namespace se::cuda
