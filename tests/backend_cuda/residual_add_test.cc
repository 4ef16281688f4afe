// cuda::residual_add against the same f32 additions on the host: one IEEE f32 add per element on
// both sides, so the residual must be equal bit for bit. x's rows are strided.
#include "backend/cuda/residual_add.h"

#include <gtest/gtest.h>

#include <tuple>

#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::upload;
using testing::upload_bf16;

using ResidualAddParam = std::tuple<int32_t, int32_t>;  // rows, cols

class ResidualAddTest : public ::testing::TestWithParam<ResidualAddParam> {};

TEST_P(ResidualAddTest, MatchesF32Addition) {
    const auto [rows, cols] = GetParam();
    const int64_t n = int64_t{rows} * cols;
    const int64_t x_stride = 3 * cols;  // x is the middle third of wider rows
    const std::vector<float> residual = testing::random_floats(n, 1, -3, 3);
    const std::vector<float> x = testing::random_bf16_values(rows * x_stride, 2, -3, 3);

    const DeviceBuffer d_residual = upload(residual);
    const DeviceBuffer d_x = upload_bf16(x);
    const Status s = residual_add({.residual = d_residual.as<float>(),
                                   .x = d_x.as<bf16>() + cols,
                                   .x_stride = x_stride,
                                   .num_rows = rows,
                                   .cols = cols},
                                  nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    std::vector<float> want = residual;
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) want[r * cols + c] += x[r * x_stride + cols + c];
    }
    testing::expect_all_equal(download<float>(d_residual, n), want, "residual");
}

INSTANTIATE_TEST_SUITE_P(Shapes, ResidualAddTest,
                         ::testing::Combine(::testing::Values(1, 7, 33),
                                            ::testing::Values(8, 576, 2056, 8192)));

// An f32 x is rounded to bf16 before the add: the residual bit for bit that of the bf16 input
// holding its rounding.
TEST(ResidualAddF32Input, EqualsTheBf16InputOfItsRounding) {
    constexpr int32_t kRows = 7, kCols = 576;
    constexpr int64_t n = int64_t{kRows} * kCols;
    const std::vector<float> residual = testing::random_floats(n, 21, -3, 3);
    const std::vector<float> x = testing::random_floats(n, 22, -3, 3);
    std::vector<float> want = residual;
    for (int64_t i = 0; i < n; ++i) want[i] += bf16_to_f32(f32_to_bf16(x[i]));
    const DeviceBuffer d_residual = upload(residual);
    const DeviceBuffer d_x = upload(x);
    const Status s = residual_add({.residual = d_residual.as<float>(),
                                   .x_f32 = d_x.as<float>(),
                                   .x_stride = kCols,
                                   .num_rows = kRows,
                                   .cols = kCols},
                                  nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    testing::expect_all_equal(download<float>(d_residual, n), want, "residual");
}

TEST(ResidualAddArgs, NeitherXNorXF32IsInvalid) {
    const DeviceBuffer a = testing::poisoned(64);
    const Status s =
        residual_add({.residual = a.as<float>(), .x_stride = 8, .num_rows = 1, .cols = 8}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(ResidualAddArgs, StrideBelowColsIsInvalid) {
    const Status s = residual_add({.x_stride = 8, .num_rows = 1, .cols = 16}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace se::cuda
