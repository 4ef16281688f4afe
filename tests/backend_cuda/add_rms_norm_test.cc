// cuda::add_rms_norm against f32 addition and ReferenceOps::rms_norm (f64 sum of squares).
//   residual: the same f32 additions on both sides, so equal bit for bit;
//   out: bf16 of an f32 computation, within one bf16 rounding (kBf16RelTol) of the f64
//        reference, plus 1e-5 relative for the f32 sum of squares over up to 8192 elements
//        (whose relative error stays near 1e-6) and 1e-6 absolute for outputs near zero.
#include "backend/cuda/add_rms_norm.h"

#include <gtest/gtest.h>

#include <tuple>

#include "backend/cpu/reference_ops.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::download_bf16;
using testing::poisoned;
using testing::upload;
using testing::upload_bf16;

constexpr float kEps = 1e-5f;

using NormParam = std::tuple<int32_t, int32_t, bool>;  // rows, cols, with x

class AddRmsNormTest : public ::testing::TestWithParam<NormParam> {};

TEST_P(AddRmsNormTest, MatchesReference) {
    const auto [rows, cols, with_x] = GetParam();
    const int64_t n = int64_t{rows} * cols;
    const std::vector<float> residual = testing::random_floats(n, 1, -3, 3);
    const std::vector<float> x = testing::random_bf16_values(n, 2, -3, 3);
    const std::vector<float> weight = testing::random_floats(cols, 3, 0.5f, 1.5f);

    const DeviceBuffer d_residual = upload(residual);
    const DeviceBuffer d_x = upload_bf16(x);
    const DeviceBuffer d_weight = upload(weight);
    const DeviceBuffer d_out = poisoned(2 * n);
    const Status s = add_rms_norm({.residual = d_residual.as<float>(),
                                   .x = with_x ? d_x.as<bf16>() : nullptr,
                                   .weight = d_weight.as<float>(),
                                   .out = d_out.as<bf16>(),
                                   .num_rows = rows,
                                   .cols = cols,
                                   .eps = kEps},
                                  nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    std::vector<float> want_residual = residual;
    if (with_x) {
        for (int64_t i = 0; i < n; ++i) want_residual[i] += x[i];
    }
    std::vector<float> want(n);
    ReferenceOps().rms_norm({DType::kF32, want_residual.data(), rows, cols},
                            {DType::kF32, weight.data(), 1, cols}, kEps,
                            {DType::kF32, want.data(), rows, cols});
    testing::expect_all_equal(download<float>(d_residual, n), want_residual, "residual");
    testing::expect_all_near(download_bf16(d_out, n), want, 1e-6f, testing::kBf16RelTol + 1e-5f,
                             "out");
}

INSTANTIATE_TEST_SUITE_P(Shapes, AddRmsNormTest,
                         ::testing::Combine(::testing::Values(1, 7, 33),
                                            ::testing::Values(8, 576, 2056, 8192),
                                            ::testing::Bool()));

TEST(AddRmsNormArgs, NoRowsIsANoOp) {
    EXPECT_TRUE(add_rms_norm({.num_rows = 0, .cols = 64}, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
