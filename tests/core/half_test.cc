#include "core/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace se {
namespace {

uint32_t bits_of(float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof(b));
    return b;
}

float float_of(uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof(f));
    return f;
}

TEST(HalfTest, F16ToF32MatchesHardwareForEveryValue) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const float expected = _cvtsh_ss(static_cast<uint16_t>(h));
        const float got = f16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(got)) << h;
        } else {
            EXPECT_EQ(bits_of(got), bits_of(expected)) << "h=" << h;
        }
    }
}

TEST(HalfTest, F32ToF16RoundsLikeHardware) {
    // Sweep exponents from below the f16 subnormal range to overflow with many mantissas.
    int checked = 0;
    for (uint32_t exp = 90; exp <= 150; ++exp) {
        for (uint32_t m = 0; m < (1u << 23); m += 4099) {
            for (uint32_t sign : {0u, 0x80000000u}) {
                const float f = float_of(sign | exp << 23 | m);
                const uint16_t expected = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
                ASSERT_EQ(f32_to_f16(f), expected) << "f=" << f;
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 100000);
    EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
}

TEST(HalfTest, Bf16RoundTripAndRounding) {
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(-3.5f)), -3.5f);
    // 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1).
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

}  // namespace
}  // namespace se
