// dequantize_row: hand-computed blocks, and the AVX2 version bit-exact against the scalar one.
#include "backend/cpu/dequant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend_test_util.h"
#include "core/half.h"
#include "core/quant_blocks.h"

namespace se {
namespace {

// Both implementations must produce exactly `want`.
void expect_dequantizes_to(DType dtype, const void* src, const std::vector<float>& want) {
    const auto n = static_cast<int64_t>(want.size());
    std::vector<float> fast = testing::nan_filled(n);
    std::vector<float> ref = testing::nan_filled(n);
    dequantize_row(dtype, src, fast.data(), n);
    dequantize_row_reference(dtype, src, ref.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(fast[i], want[i]) << dtype_name(dtype) << " element " << i;
        EXPECT_EQ(ref[i], want[i]) << dtype_name(dtype) << " element " << i;
    }
}

// Nibble of element i (GGUF order): low nibbles hold elements 0..15, high nibbles 16..31.
int nibble_of(const uint8_t* qs, int i) {
    return i < 16 ? qs[i] & 0x0f : qs[i - 16] >> 4;
}

TEST(DequantTest, Q4_1HandComputedBlock) {
    BlockQ4_1 b{};
    b.d = 0x3800;  // 0.5
    b.m = 0xbd00;  // -1.25
    for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(i | (15 - i) << 4);
    std::vector<float> want(32);
    for (int i = 0; i < 16; ++i) {
        want[i] = 0.5f * i - 1.25f;              // low nibble i
        want[i + 16] = 0.5f * (15 - i) - 1.25f;  // high nibble 15 - i
    }
    EXPECT_EQ(nibble_of(b.qs, 17), 14);
    expect_dequantizes_to(DType::kQ4_1, &b, want);
}

TEST(DequantTest, Q4_0HandComputedBlock) {
    BlockQ4_0 b{};
    b.d = 0x3400;  // 0.25
    for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>((i * 7) % 16 | i << 4);
    std::vector<float> want(32);
    for (int i = 0; i < 16; ++i) {
        want[i] = 0.25f * ((i * 7) % 16 - 8);
        want[i + 16] = 0.25f * (i - 8);
    }
    expect_dequantizes_to(DType::kQ4_0, &b, want);
}

TEST(DequantTest, Q8_0HandComputedBlock) {
    BlockQ8_0 b{};
    b.d = 0xb000;  // -0.125
    std::vector<float> want(32);
    for (int i = 0; i < 32; ++i) {
        const int q = (i * 9) % 256 - 128;  // -128 .. 127
        b.qs[i] = static_cast<int8_t>(q);
        want[i] = -0.125f * static_cast<float>(q);
    }
    expect_dequantizes_to(DType::kQ8_0, &b, want);
}

TEST(DequantTest, SixteenBitFloatsHandComputed) {
    const uint16_t f16[9] = {0x3c00, 0xc000, 0x3555, 0x0001, 0x7bff,
                             0x8000, 0x7c00, 0x3800, 0x4248};
    const std::vector<float> want_f16 = {1.0f,     -2.0f, 0.333251953125f, std::ldexp(1.0f, -24),
                                         65504.0f, -0.0f, INFINITY,        0.5f,
                                         3.140625f};
    expect_dequantizes_to(DType::kF16, f16, want_f16);
    const uint16_t bf16[9] = {0x3f80, 0xc000, 0x3eab, 0x0001, 0x7f7f,
                              0x8000, 0x7f80, 0x3f00, 0x4049};
    const std::vector<float> want_bf16 = {
        1.0f,     -2.0f, 0.333984375f, std::ldexp(1.0f, -133), std::ldexp(1.9921875f, 127), -0.0f,
        INFINITY, 0.5f,  3.140625f};
    expect_dequantizes_to(DType::kBF16, bf16, want_bf16);
}

class DequantRandomTest : public ::testing::TestWithParam<DType> {};

TEST_P(DequantRandomTest, FastMatchesReferenceBitForBit) {
    const DType dtype = GetParam();
    const int64_t n = 32 * 37;
    const testing::Weights w = testing::random_weights(dtype, 1, n, 99);
    std::vector<float> fast = testing::nan_filled(n);
    std::vector<float> ref = testing::nan_filled(n);
    dequantize_row(dtype, w.bytes.data(), fast.data(), n);
    dequantize_row_reference(dtype, w.bytes.data(), ref.data(), n);
    EXPECT_EQ(0, std::memcmp(fast.data(), ref.data(), n * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, DequantRandomTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                           DType::kQ4_0, DType::kQ4_1),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace se
