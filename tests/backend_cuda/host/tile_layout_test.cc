// The shared-memory tile layout of the tensor-core kernels (tile_layout.h), on the CPU: the
// swizzle is a permutation of each row's chunks, the 8 rows an ldmatrix matrix reads at one
// logical chunk hit 8 different bank groups, the XOR-and-add step the MMA loops use lands on the
// same address as the swizzle itself, and the copy plan writes every chunk of a tile exactly once.
#include "backend/cuda/tile_layout.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace se::cuda {
namespace {

template <int kHeadDim>
void check_swizzle() {
    constexpr int kChunks = kHeadDim / 8;
    constexpr int kRows = 128;
    std::vector<int> hits(kRows * kHeadDim / 8, 0);
    for (int row = 0; row < kRows; ++row) {
        for (int chunk = 0; chunk < kChunks; ++chunk) {
            const int offset = tile_offset<kHeadDim>(row, chunk);
            ASSERT_EQ(offset % 8, 0);
            ASSERT_GE(offset, row * kHeadDim);  // stays in its own row
            ASSERT_LT(offset, (row + 1) * kHeadDim);
            ++hits[offset / 8];
        }
    }
    for (int h : hits) ASSERT_EQ(h, 1);
    // ldmatrix: rows r0 .. r0 + 7 (r0 a multiple of 8) at one logical chunk; a 16-byte bank
    // group is (byte offset / 16) % 8.
    for (int r0 = 0; r0 < kRows; r0 += 8) {
        for (int chunk = 0; chunk < kChunks; ++chunk) {
            std::set<int> groups;
            for (int row = r0; row < r0 + 8; ++row)
                groups.insert((tile_offset<kHeadDim>(row, chunk) * 2 / 16) % 8);
            EXPECT_EQ(groups.size(), 8u) << "rows " << r0 << "+, chunk " << chunk;
        }
    }
}

TEST(TileLayout, SwizzleIsAConflictFreePermutation) {
    check_swizzle<64>();
    check_swizzle<128>();
}

template <int kHeadDim>
void check_advance() {
    // Tiles start on 128 bytes: the bases of Q, K and V inside the kernel's shared memory.
    for (uint32_t base : {0u, 128u, 16384u, 32768u + 16384u}) {
        for (int row = 0; row < 64; ++row) {
            for (int chunk = 0; chunk < 2; ++chunk) {
                const uint32_t addr = base + 2 * tile_offset<kHeadDim>(row, chunk);
                for (int even = 0; chunk + even < kHeadDim / 8; even += 2) {
                    EXPECT_EQ(tile_addr_advance(addr, even),
                              base + 2 * tile_offset<kHeadDim>(row, chunk + even))
                        << "row " << row << " chunk " << chunk << " + " << even;
                }
            }
        }
    }
}

TEST(TileLayout, AdvanceMatchesTheSwizzle) {
    check_advance<64>();
    check_advance<128>();
}

template <int kHeadDim, int kThreads, int kRows>
void check_copy_plan() {
    using Plan = TileCopyPlan<kHeadDim, kThreads, kRows>;
    std::vector<int> hits(kRows * Plan::kChunks, 0);
    for (int thread = 0; thread < kThreads; ++thread) {
        for (int pass = 0; pass < Plan::kPasses; ++pass) {
            const int row = Plan::row(thread, pass);
            const int chunk = Plan::chunk(thread);
            ASSERT_GE(row, 0);
            ASSERT_LT(row, kRows);
            ASSERT_LT(chunk, Plan::kChunks);
            ++hits[row * Plan::kChunks + chunk];
        }
    }
    for (int h : hits) ASSERT_EQ(h, 1);
}

TEST(TileLayout, CopyPlanCoversEveryChunkOnce) {
    check_copy_plan<64, 128, 64>();
    check_copy_plan<64, 128, 128>();
    check_copy_plan<128, 128, 64>();
    check_copy_plan<128, 128, 128>();
}

}  // namespace
}  // namespace se::cuda
