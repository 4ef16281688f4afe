// cuda::add_rms_norm against f32 addition and ReferenceOps::rms_norm (f64 sum of squares).
//   residual: the same f32 additions on both sides, so equal bit for bit;
//   out: bf16 of an f32 computation, within one bf16 rounding (kBf16RelTol) of the f64
//        reference, plus 1e-5 relative for the f32 sum of squares over up to 8192 elements
//        (whose relative error stays near 1e-6) and 1e-6 absolute for outputs near zero.
// Gathered rows (rows != null): out row i bit for bit the ungathered kernel's row rows[i], within
// the same tolerance of the reference, and the residual untouched.
#include "backend/cuda/add_rms_norm.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

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
                                            ::testing::Values(8, 576, 2056, 4096, 8192, 12296),
                                            ::testing::Bool()));

// Source rows of the gather: repeats, reversed order, a single row.
using GatherParam = std::tuple<std::vector<int32_t>, int32_t>;  // rows, cols

class AddRmsNormGatherTest : public ::testing::TestWithParam<GatherParam> {};

TEST_P(AddRmsNormGatherTest, NormalisesListedRows) {
    const auto [rows, cols] = GetParam();
    constexpr int32_t kResidualRows = 9;
    const auto num_out = static_cast<int32_t>(rows.size());
    const int64_t n = int64_t{kResidualRows} * cols;
    const std::vector<float> residual = testing::random_floats(n, 4, -3, 3);
    const std::vector<float> weight = testing::random_floats(cols, 5, 0.5f, 1.5f);

    const DeviceBuffer d_residual = upload(residual);
    const DeviceBuffer d_weight = upload(weight);
    const DeviceBuffer d_rows = upload(rows);
    const DeviceBuffer d_out = poisoned(2 * int64_t{num_out} * cols);
    const DeviceBuffer d_all = poisoned(2 * n);  // every row, ungathered
    const Status s = add_rms_norm({.residual = d_residual.as<float>(),
                                   .weight = d_weight.as<float>(),
                                   .out = d_out.as<bf16>(),
                                   .rows = d_rows.as<int32_t>(),
                                   .num_rows = num_out,
                                   .cols = cols,
                                   .eps = kEps},
                                  nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    testing::must_ok(add_rms_norm({.residual = d_residual.as<float>(),
                                   .weight = d_weight.as<float>(),
                                   .out = d_all.as<bf16>(),
                                   .num_rows = kResidualRows,
                                   .cols = cols,
                                   .eps = kEps},
                                  nullptr));

    std::vector<float> want(n);
    ReferenceOps().rms_norm({DType::kF32, residual.data(), kResidualRows, cols},
                            {DType::kF32, weight.data(), 1, cols}, kEps,
                            {DType::kF32, want.data(), kResidualRows, cols});
    const std::vector<float> all = download_bf16(d_all, n);
    std::vector<float> want_rows;
    std::vector<float> all_rows;
    for (const int32_t r : rows) {
        want_rows.insert(want_rows.end(), want.begin() + int64_t{r} * cols,
                         want.begin() + int64_t{r + 1} * cols);
        all_rows.insert(all_rows.end(), all.begin() + int64_t{r} * cols,
                        all.begin() + int64_t{r + 1} * cols);
    }
    const std::vector<float> got = download_bf16(d_out, int64_t{num_out} * cols);
    testing::expect_all_equal(got, all_rows, "out vs ungathered");
    testing::expect_all_near(got, want_rows, 1e-6f, testing::kBf16RelTol + 1e-5f, "out");
    testing::expect_all_equal(download<float>(d_residual, n), residual, "residual");
}

std::string gather_param_name(const ::testing::TestParamInfo<GatherParam>& info) {
    const auto& [rows, cols] = info.param;
    std::string name = "rows";
    for (const int32_t r : rows) {
        name += '_';  // not "_" + ...: GCC 12 reports a false -Wrestrict on that
        name += std::to_string(r);
    }
    return name + "_cols" + std::to_string(cols);
}

INSTANTIATE_TEST_SUITE_P(Rows, AddRmsNormGatherTest,
                         ::testing::Combine(::testing::Values(std::vector<int32_t>{3, 3, 0, 8, 3},
                                                              std::vector<int32_t>{8, 7, 6, 5, 4, 3,
                                                                                   2, 1, 0},
                                                              std::vector<int32_t>{5}),
                                            ::testing::Values(576, 4096)),
                         gather_param_name);

// An f32 x (a tensor-parallel all-reduce's sum) is rounded to bf16 before the add: residual and
// out bit for bit those of the bf16 input holding its rounding.
TEST(AddRmsNormF32Input, EqualsTheBf16InputOfItsRounding) {
    constexpr int32_t kRows = 5, kCols = 2056;
    constexpr int64_t n = int64_t{kRows} * kCols;
    const std::vector<float> residual = testing::random_floats(n, 11, -3, 3);
    const std::vector<float> x = testing::random_floats(n, 12, -3, 3);  // not bf16 values
    std::vector<float> rounded(x.size());
    for (size_t i = 0; i < x.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16(x[i]));
    const std::vector<float> weight = testing::random_floats(kCols, 13, 0.5f, 1.5f);
    const DeviceBuffer d_weight = upload(weight);
    const DeviceBuffer d_x32 = upload(x);
    const DeviceBuffer d_x16 = upload_bf16(rounded);
    std::vector<std::vector<float>> residuals, outs;
    for (const bool f32_in : {true, false}) {
        const DeviceBuffer d_residual = upload(residual);
        const DeviceBuffer d_out = poisoned(2 * n);
        const Status s = add_rms_norm({.residual = d_residual.as<float>(),
                                       .x = f32_in ? nullptr : d_x16.as<bf16>(),
                                       .x_f32 = f32_in ? d_x32.as<float>() : nullptr,
                                       .weight = d_weight.as<float>(),
                                       .out = d_out.as<bf16>(),
                                       .num_rows = kRows,
                                       .cols = kCols,
                                       .eps = kEps},
                                      nullptr);
        ASSERT_TRUE(s.ok()) << s.to_string();
        residuals.push_back(download<float>(d_residual, n));
        outs.push_back(download_bf16(d_out, n));
    }
    testing::expect_all_equal(residuals[0], residuals[1], "residual");
    testing::expect_all_equal(outs[0], outs[1], "out");
    EXPECT_NE(residuals[0][0], residual[0] + x[0]);  // x was rounded (seed 12: not a bf16 value)
}

TEST(AddRmsNormArgs, XAndXF32TogetherAreRejected) {
    const DeviceBuffer a = poisoned(64);
    const Status s = add_rms_norm({.residual = a.as<float>(),
                                   .x = a.as<bf16>(),
                                   .x_f32 = a.as<float>(),
                                   .weight = a.as<float>(),
                                   .out = a.as<bf16>(),
                                   .num_rows = 1,
                                   .cols = 8},
                                  nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(AddRmsNormArgs, RowsWithXIsRejected) {
    const DeviceBuffer residual = upload(std::vector<float>(64, 1.0f));
    const DeviceBuffer x = upload_bf16(std::vector<float>(64, 1.0f));
    const DeviceBuffer weight = upload(std::vector<float>(64, 1.0f));
    const DeviceBuffer out = poisoned(2 * 64);
    const DeviceBuffer rows = upload(std::vector<int32_t>{0});
    const Status s = add_rms_norm({.residual = residual.as<float>(),
                                   .x = x.as<bf16>(),
                                   .weight = weight.as<float>(),
                                   .out = out.as<bf16>(),
                                   .rows = rows.as<int32_t>(),
                                   .num_rows = 1,
                                   .cols = 64},
                                  nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("rows"), std::string::npos) << s.message();
}

TEST(AddRmsNormArgs, NoRowsIsANoOp) {
    EXPECT_TRUE(add_rms_norm({.num_rows = 0, .cols = 64}, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
