// The shared-memory layout and descriptors of the wgmma prefill kernel (sm90a/wgmma_layout.h),
// checked on the CPU against the hardware's rules as the PTX ISA and CUTLASS state them:
//   - the 128-byte swizzle XORs address bits [4, 7) with bits [7, 10);
//   - a K-major operand (128-byte swizzle) puts element (m, k) of a k16 step at
//       start + (m % 8) * 128 + (m / 8) * SBO + k * 2            (16 contiguous k per row),
//     an MN-major one puts element (k, n) at
//       start + (k % 8) * 128 + (k / 8) * SBO + (n % 64) * 2 + (n / 64) * LBO,
//     both before the swizzle (CUTLASS make_gmma_desc's canonical layouts, in bytes);
//   - the descriptor's fields sit at bits 0, 16, 32 (>> 4) and 62.
// So every element each wgmma of the kernel reads is the element the producer stored there: the
// Q and K reads of every k16 step of S = Q K^T, and the V reads of every 16-key step of P V.
// (The GPU side of the same claim is tests/backend_cuda/wgmma_probe_test.cc.)
#include "backend/cuda/sm90a/wgmma_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

namespace se::cuda::sm90a {
namespace {

constexpr int kRows = 128;

uint32_t hw_swizzle(uint32_t byte_addr) {
    return byte_addr ^ (((byte_addr >> 7) & 7u) << 4);
}

// Byte offset where the producer stores dim `dim` of row `row` of a [128, head_dim] tile.
uint32_t stored_at(int row, int dim) {
    return swizzled_offset<kRows>(row, dim / 8) + static_cast<uint32_t>(dim % 8) * 2;
}

uint32_t field(uint64_t desc, int lo, int bits) {
    return static_cast<uint32_t>((desc >> lo) & ((uint64_t{1} << bits) - 1));
}

TEST(WgmmaLayout, SwizzleIsTheHardwares128ByteSwizzle) {
    for (int head_dim : {64, 128}) {
        std::set<uint32_t> seen;
        for (int row = 0; row < kRows; ++row) {
            for (int chunk = 0; chunk < head_dim / 8; ++chunk) {
                const uint32_t plain = static_cast<uint32_t>((chunk / 8) * kSlabBytes<kRows> +
                                                             row * kRowBytes + (chunk % 8) * 16);
                EXPECT_EQ(swizzled_offset<kRows>(row, chunk), hw_swizzle(plain));
                seen.insert(swizzled_offset<kRows>(row, chunk));
            }
        }
        // Every 16-byte chunk of the tile exactly once.
        EXPECT_EQ(seen.size(), static_cast<size_t>(kRows * head_dim / 8));
        EXPECT_EQ(*seen.rbegin(), static_cast<uint32_t>(kRows * head_dim * 2 - 16));
    }
}

TEST(WgmmaLayout, DescriptorFields) {
    const uint64_t k = k_major_desc(0x1400);
    EXPECT_EQ(field(k, 0, 14), 0x1400u >> 4);
    EXPECT_EQ(field(k, 16, 14), 1u);  // unused for swizzled K-major; CUTLASS writes 1
    EXPECT_EQ(field(k, 32, 14), 1024u >> 4);
    EXPECT_EQ(field(k, 49, 3), 0u);
    EXPECT_EQ(field(k, 62, 2), 1u);  // 128-byte swizzle
    const uint64_t mn = mn_major_desc<kRows>(0x9000);
    EXPECT_EQ(field(mn, 0, 14), 0x9000u >> 4);
    EXPECT_EQ(field(mn, 16, 14), static_cast<uint32_t>(kSlabBytes<kRows>) >> 4);
    EXPECT_EQ(field(mn, 32, 14), 1024u >> 4);
    EXPECT_EQ(field(mn, 62, 2), 1u);
    EXPECT_EQ(field(desc_advance(k, 96), 0, 14), (0x1400u + 96) >> 4);
    EXPECT_EQ(desc_advance(k, 96) >> 14, k >> 14);  // nothing but the start moves
    // The largest start the kernel uses (the last V stage's last step) still fits 14 bits.
    EXPECT_LT(227u * 1024u, 1u << 18);
}

// S = Q K^T: k16 step `step` reads dims 16 step .. + 15 of 64 rows of Q (from `first_row`) and
// of 128 rows of K, through descriptors whose start is the tile's plus the kernel's offset.
TEST(WgmmaLayout, KMajorStepsReadWhatWasStored) {
    for (int head_dim : {64, 128}) {
        for (int step = 0; step < head_dim / 16; ++step) {
            const uint32_t offset = (step / 4) * kSlabBytes<kRows> + (step % 4) * kKStepBytes;
            for (int first_row : {0, 64}) {
                const uint32_t start = first_row * kRowBytes + offset;
                for (int m = 0; m < 64; ++m) {
                    for (int k = 0; k < 16; ++k) {
                        const uint32_t read = hw_swizzle(start + (m % 8) * 128 + (m / 8) * 1024 +
                                                         static_cast<uint32_t>(k) * 2);
                        ASSERT_EQ(read, stored_at(first_row + m, 16 * step + k))
                            << "dim " << head_dim << " step " << step << " row " << m << " k " << k;
                    }
                }
            }
        }
    }
}

// O += P V: 16-key step `step` reads keys 16 step .. + 15 (K of the product) and all head_dim
// dims (N) of the V tile, MN-major.
TEST(WgmmaLayout, MnMajorStepsReadWhatWasStored) {
    for (int head_dim : {64, 128}) {
        const uint32_t lbo = kSlabBytes<kRows>;
        for (int step = 0; step < kRows / 16; ++step) {
            const uint32_t start = static_cast<uint32_t>(step * kMnKStepBytes);
            for (int k = 0; k < 16; ++k) {
                for (int n = 0; n < head_dim; ++n) {
                    const uint32_t read =
                        hw_swizzle(start + (k % 8) * 128 + (k / 8) * 1024 +
                                   static_cast<uint32_t>(n % 64) * 2 + (n / 64) * lbo);
                    ASSERT_EQ(read, stored_at(16 * step + k, n))
                        << "dim " << head_dim << " step " << step << " key " << k << " n " << n;
                }
            }
        }
    }
}

}  // namespace
}  // namespace se::cuda::sm90a
