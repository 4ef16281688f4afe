// CpuOps::matmul against ReferenceOps for every weight dtype, in the decode (GEMV) and prefill
// (GEMM) regimes, with 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference_ops.h"
#include "backend_test_util.h"

namespace se {
namespace {

using testing::f32_cview;
using testing::f32_view;

// Tolerance per output: f32 accumulation error relative to the sum of |x * w| over the row.
constexpr float kRelTol = 1e-5f;

std::vector<float> abs_dot_bounds(const std::vector<float>& x, const testing::Weights& w,
                                  int64_t n) {
    std::vector<float> row(w.cols);
    std::vector<float> bound(n * w.rows);
    for (int64_t j = 0; j < w.rows; ++j) {
        dequantize_row_reference(w.dtype, w.view().row(j), row.data(), w.cols);
        for (int64_t i = 0; i < n; ++i) {
            double s = 0.0;
            for (int64_t c = 0; c < w.cols; ++c) s += std::fabs(double{x[i * w.cols + c]} * row[c]);
            bound[i * w.rows + j] = kRelTol * static_cast<float>(s) + 1e-30f;
        }
    }
    return bound;
}

using MatmulParam = std::tuple<DType, int64_t, int64_t, int64_t>;  // dtype, n, in, out

class MatmulTest : public ::testing::TestWithParam<MatmulParam> {};

TEST_P(MatmulTest, MatchesReferenceWithOneAndTwoThreads) {
    const auto [dtype, n, in, out] = GetParam();
    const uint32_t seed = static_cast<uint32_t>(n * 7919 + in * 31 + out);
    const testing::Weights w = testing::random_weights(dtype, out, in, seed);
    const std::vector<float> x = testing::random_floats(n * in, seed + 1);

    std::vector<float> want = testing::nan_filled(n * out);
    ReferenceOps().matmul(f32_cview(x, n, in), w.view(), f32_view(want, n, out));
    const std::vector<float> bound = abs_dot_bounds(x, w, n);

    std::vector<float> got[2];
    for (int threads = 1; threads <= 2; ++threads) {
        CpuOps ops({.num_threads = threads});
        std::vector<float>& y = got[threads - 1];
        y = testing::nan_filled(n * out);
        ops.matmul(f32_cview(x, n, in), w.view(), f32_view(y, n, out));
        testing::expect_all_near(y, want, bound, "threads=" + std::to_string(threads));
        // A second call reuses the scratch buffers and must give the same bits.
        std::vector<float> again = testing::nan_filled(n * out);
        ops.matmul(f32_cview(x, n, in), w.view(), f32_view(again, n, out));
        EXPECT_EQ(0, std::memcmp(again.data(), y.data(), y.size() * sizeof(float)));
    }
    std::vector<float> twice(bound.size());
    for (size_t i = 0; i < bound.size(); ++i) twice[i] = 2 * bound[i];
    testing::expect_all_near(got[1], got[0], twice, "1 vs 2 threads");
}

std::string param_name(const ::testing::TestParamInfo<MatmulParam>& info) {
    const auto [dtype, n, in, out] = info.param;
    return std::string(dtype_name(dtype)) + "_n" + std::to_string(n) + "_in" + std::to_string(in) +
           "_out" + std::to_string(out);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, MatmulTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16,
                                                              DType::kBF16, DType::kQ8_0,
                                                              DType::kQ4_0, DType::kQ4_1),
                                            ::testing::Values(1, 2, 3, 7, 8, 9, 64, 513),
                                            ::testing::Values(32, 64, 576, 1536),
                                            ::testing::Values(1, 5, 16, 192, 577)),
                         param_name);

// Float weights accept any width, including ones that are not a multiple of 8 or 32.
class MatmulOddWidthTest : public ::testing::TestWithParam<std::tuple<DType, int64_t, int64_t>> {};

TEST_P(MatmulOddWidthTest, MatchesReference) {
    const auto [dtype, n, in] = GetParam();
    const int64_t out = 23;
    const testing::Weights w = testing::random_weights(dtype, out, in, 5);
    const std::vector<float> x = testing::random_floats(n * in, 6);
    std::vector<float> want = testing::nan_filled(n * out);
    ReferenceOps().matmul(f32_cview(x, n, in), w.view(), f32_view(want, n, out));
    std::vector<float> got = testing::nan_filled(n * out);
    CpuOps ops({.num_threads = 2});
    ops.matmul(f32_cview(x, n, in), w.view(), f32_view(got, n, out));
    testing::expect_all_near(got, want, abs_dot_bounds(x, w, n), "odd width");
}

INSTANTIATE_TEST_SUITE_P(
    FloatDtypes, MatmulOddWidthTest,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                       ::testing::Values(1, 4, 30), ::testing::Values(1, 7, 13, 300)));

TEST(MatmulTest, ZeroWidthGivesZeros) {
    std::vector<float> x;
    const testing::Weights w{DType::kF32, 3, 0, {}};
    std::vector<float> y = testing::nan_filled(2 * 3);
    CpuOps ops({.num_threads = 2});
    ops.matmul({DType::kF32, x.data(), 2, 0}, w.view(), f32_view(y, 2, 3));
    for (float v : y) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace se
