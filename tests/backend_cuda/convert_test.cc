// cuda::convert_f32_to_bf16 and convert_bf16_to_f32 against core/half.h, bit for bit: the
// conversions are exact functions of their input (round to nearest even, NaN kept), so there is
// nothing to tolerate. Outputs are strided, and the columns past `cols` must keep their poison.
#include "backend/cuda/convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload;

float from_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
}

// Random values plus every case the rounding has to get right.
std::vector<float> tricky_f32(int64_t n) {
    std::vector<float> v = testing::random_floats(n, 7, -1000.0f, 1000.0f);
    const float specials[] = {
        0.0f,
        -0.0f,
        std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::max(),  // rounds up to inf
        std::numeric_limits<float>::denorm_min(),
        -std::numeric_limits<float>::denorm_min(),
        from_bits(0x3f808000u),  // halfway, even below: rounds down
        from_bits(0x3f818000u),  // halfway, odd below: rounds up
        from_bits(0x3f808001u),  // just above halfway
        from_bits(0x7fc00000u),  // quiet NaN
        from_bits(0xffc00001u),  // negative NaN with payload
        from_bits(0x7f800001u),  // signalling NaN: low payload bits only
        from_bits(0x007fffffu),  // largest subnormal
    };
    for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i) v[i * 2] = specials[i];
    return v;
}

constexpr int32_t kRows = 5;
constexpr int32_t kCols = 37;  // odd: no vector width divides it
constexpr int64_t kInStride = 40;
constexpr int64_t kOutStride = 48;

TEST(ConvertTest, F32ToBf16MatchesHalfH) {
    const std::vector<float> in = tricky_f32(kRows * kInStride);
    const DeviceBuffer d_in = upload(in);
    const DeviceBuffer d_out = poisoned(2 * kRows * kOutStride);
    const Status s = convert_f32_to_bf16({.in = d_in.as<float>(),
                                          .out = d_out.as<bf16>(),
                                          .in_stride = kInStride,
                                          .out_stride = kOutStride,
                                          .num_rows = kRows,
                                          .cols = kCols},
                                         nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const std::vector<uint16_t> got = download<uint16_t>(d_out, kRows * kOutStride);
    for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t c = 0; c < kOutStride; ++c) {
            const uint16_t want = c < kCols ? f32_to_bf16(in[r * kInStride + c]) : 0xffff;
            EXPECT_EQ(got[r * kOutStride + c], want) << "row " << r << ", column " << c;
        }
    }
}

TEST(ConvertTest, Bf16ToF32MatchesHalfH) {
    std::vector<uint16_t> in = testing::to_bf16(tricky_f32(kRows * kInStride));
    // bf16 patterns no f32 rounds to: signalling NaNs and the smallest subnormal.
    in[1] = 0x7f81u;
    in[3] = 0xff81u;
    in[5] = 0x0001u;
    const DeviceBuffer d_in = upload(in);
    const DeviceBuffer d_out = poisoned(4 * kRows * kOutStride);
    const Status s = convert_bf16_to_f32({.in = d_in.as<bf16>(),
                                          .out = d_out.as<float>(),
                                          .in_stride = kInStride,
                                          .out_stride = kOutStride,
                                          .num_rows = kRows,
                                          .cols = kCols},
                                         nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const std::vector<uint32_t> got = download<uint32_t>(d_out, kRows * kOutStride);
    for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t c = 0; c < kOutStride; ++c) {
            uint32_t want = 0xffffffffu;
            if (c < kCols) {
                const float f = bf16_to_f32(in[r * kInStride + c]);
                std::memcpy(&want, &f, sizeof(want));
            }
            EXPECT_EQ(got[r * kOutStride + c], want) << "row " << r << ", column " << c;
        }
    }
}

TEST(ConvertTest, StrideBelowColsIsInvalid) {
    const Status s =
        convert_f32_to_bf16({.in_stride = 8, .out_stride = 16, .num_rows = 1, .cols = 9}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(ConvertTest, NoRowsIsANoOp) {
    EXPECT_TRUE(convert_bf16_to_f32({.in_stride = 8, .out_stride = 8, .cols = 8}, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
