#include "model/weight_convert.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/half.h"

namespace se {
namespace {

TEST(WeightConvertTest, F32ToBf16RoundsToNearestEven) {
    // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even one (1.0);
    // 1 + 3 * 2^-8 goes up to 1 + 2^-6.
    const std::vector<float> src = {1.0f, -2.5f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 3.0e38f};
    auto out = convert_tensor(ConstTensorView(DType::kF32, src.data(), 1, 5), DType::kBF16);
    ASSERT_TRUE(out.ok());
    const auto* bf = out->as<uint16_t>();
    EXPECT_EQ(bf[0], 0x3f80);
    EXPECT_EQ(bf16_to_f32(bf[1]), -2.5f);
    EXPECT_EQ(bf16_to_f32(bf[2]), 1.0f);
    EXPECT_EQ(bf16_to_f32(bf[3]), 1.0f + 0x1p-6f);
    EXPECT_EQ(bf[4], f32_to_bf16(3.0e38f));
}

TEST(WeightConvertTest, RoundTripsThroughEveryFloatType) {
    std::vector<float> src(200000);  // more than one parallel chunk
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<float>(static_cast<int>(i % 512) - 256) / 64.0f;  // exact in f16/bf16
    auto f16 = convert_tensor(ConstTensorView(DType::kF32, src.data(), 400, 500), DType::kF16);
    ASSERT_TRUE(f16.ok());
    auto bf16 = convert_tensor(ConstTensorView(DType::kF16, f16->data(), 400, 500), DType::kBF16);
    ASSERT_TRUE(bf16.ok());
    auto back = convert_tensor(ConstTensorView(DType::kBF16, bf16->data(), 400, 500), DType::kF32);
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->size(), src.size() * sizeof(float));
    for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(back->as<float>()[i], src[i]) << i;
}

TEST(WeightConvertTest, FloatTypes) {
    EXPECT_TRUE(dtype_is_float(DType::kF32));
    EXPECT_TRUE(dtype_is_float(DType::kF16));
    EXPECT_TRUE(dtype_is_float(DType::kBF16));
    EXPECT_FALSE(dtype_is_float(DType::kQ4_1));
    EXPECT_FALSE(dtype_is_float(DType::kI32));
}

}  // namespace
}  // namespace se
