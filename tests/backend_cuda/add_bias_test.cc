// cuda::add_bias against an f64 reference: the kernel's f32 sum is within 2^-24 of the exact sum
// and its bf16 rounding within kBf16RelTol, so the tolerance is (kBf16RelTol + 1e-6) * |want|.
// y's rows are strided; the columns past `cols` must keep their bits.
#include "backend/cuda/add_bias.h"

#include <gtest/gtest.h>

#include <tuple>

#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::upload;

using AddBiasParam = std::tuple<int32_t, int32_t>;  // rows, cols

class AddBiasTest : public ::testing::TestWithParam<AddBiasParam> {};

TEST_P(AddBiasTest, MatchesReference) {
    const auto [rows, cols] = GetParam();
    const int64_t stride = cols + 16;
    const std::vector<uint16_t> y =
        testing::to_bf16(testing::random_floats(rows * stride, 1, -4, 4));
    const std::vector<float> bias = testing::random_floats(cols, 2, -2, 2);

    const DeviceBuffer d_y = upload(y);
    const DeviceBuffer d_bias = upload(bias);
    const Status s = add_bias({.y = d_y.as<bf16>(),
                               .bias = d_bias.as<float>(),
                               .row_stride = stride,
                               .num_rows = rows,
                               .cols = cols},
                              nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    const std::vector<uint16_t> got = download<uint16_t>(d_y, y.size());
    std::vector<float> got_used;
    std::vector<float> want;
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < stride; ++c) {
            const int64_t i = r * stride + c;
            if (c >= cols) {
                EXPECT_EQ(got[i], y[i]) << "padding changed at row " << r << ", column " << c;
                continue;
            }
            got_used.push_back(bf16_to_f32(got[i]));
            want.push_back(static_cast<float>(double{bf16_to_f32(y[i])} + double{bias[c]}));
        }
    }
    testing::expect_all_near(got_used, want, 0.0f, testing::kBf16RelTol + 1e-6f, "y");
}

INSTANTIATE_TEST_SUITE_P(Shapes, AddBiasTest,
                         ::testing::Combine(::testing::Values(1, 7, 33),
                                            ::testing::Values(8, 576, 2056)));

TEST(AddBiasArgs, ColsNotAMultipleOf8IsInvalid) {
    const Status s = add_bias({.row_stride = 16, .num_rows = 1, .cols = 12}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace se::cuda
