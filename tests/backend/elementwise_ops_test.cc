// The element-wise and row-wise CpuOps (add, add_bias, rms_norm, head_rms_norm, silu_mul,
// embedding) against ReferenceOps, on sizes below and above the threading threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference_ops.h"
#include "backend_test_util.h"

namespace se {
namespace {

using testing::f32_cview;
using testing::f32_view;

struct Shape {
    int64_t rows = 0;
    int64_t cols = 0;
};

class ElementwiseTest : public ::testing::TestWithParam<Shape> {
  protected:
    CpuOps ops_{{.num_threads = 2}};
    ReferenceOps ref_;
};

TEST_P(ElementwiseTest, AddMatchesReferenceExactly) {
    const auto [rows, cols] = GetParam();
    const std::vector<float> x = testing::random_floats(rows * cols, 1);
    std::vector<float> got = testing::random_floats(rows * cols, 2);
    std::vector<float> want = got;
    ops_.add(f32_view(got, rows, cols), f32_cview(x, rows, cols));
    ref_.add(f32_view(want, rows, cols), f32_cview(x, rows, cols));
    EXPECT_EQ(got, want);
}

TEST_P(ElementwiseTest, AddBiasMatchesReferenceExactly) {
    const auto [rows, cols] = GetParam();
    const std::vector<float> bias = testing::random_floats(cols, 3);
    std::vector<float> got = testing::random_floats(rows * cols, 4);
    std::vector<float> want = got;
    ops_.add_bias(f32_view(got, rows, cols), f32_cview(bias, 1, cols));
    ref_.add_bias(f32_view(want, rows, cols), f32_cview(bias, 1, cols));
    EXPECT_EQ(got, want);
}

TEST_P(ElementwiseTest, RmsNormMatchesReference) {
    const auto [rows, cols] = GetParam();
    const std::vector<float> x = testing::random_floats(rows * cols, 5, -3, 3);
    const std::vector<float> w = testing::random_floats(cols, 6, 0.5f, 1.5f);
    std::vector<float> want = testing::nan_filled(rows * cols);
    ref_.rms_norm(f32_cview(x, rows, cols), f32_cview(w, 1, cols), 1e-5f,
                  f32_view(want, rows, cols));
    std::vector<float> got = testing::nan_filled(rows * cols);
    ops_.rms_norm(f32_cview(x, rows, cols), f32_cview(w, 1, cols), 1e-5f,
                  f32_view(got, rows, cols));
    testing::expect_all_near(got, want, 1e-6f, 2e-6f, "rms_norm");
    // In place (y aliases x) gives the same values.
    std::vector<float> in_place = x;
    ops_.rms_norm(f32_cview(in_place, rows, cols), f32_cview(w, 1, cols), 1e-5f,
                  f32_view(in_place, rows, cols));
    EXPECT_EQ(in_place, got);
}

TEST_P(ElementwiseTest, HeadRmsNormMatchesReference) {
    const auto [rows, cols] = GetParam();
    const int32_t head_dim = cols % 64 == 0 ? 64 : static_cast<int32_t>(cols);
    const std::vector<float> w = testing::random_floats(head_dim, 7, 0.5f, 1.5f);
    std::vector<float> got = testing::random_floats(rows * cols, 8, -3, 3);
    std::vector<float> want = got;
    ops_.head_rms_norm(f32_view(got, rows, cols), head_dim, f32_cview(w, 1, head_dim), 1e-6f);
    ref_.head_rms_norm(f32_view(want, rows, cols), head_dim, f32_cview(w, 1, head_dim), 1e-6f);
    testing::expect_all_near(got, want, 1e-6f, 2e-6f, "head_rms_norm");
}

TEST_P(ElementwiseTest, SiluMulMatchesReference) {
    const auto [rows, cols] = GetParam();
    std::vector<float> gate = testing::random_floats(rows * cols, 9, -12, 12);
    gate[0] = -100.0f;  // exp(-gate) overflows
    gate[rows * cols - 1] = 95.0f;
    const std::vector<float> up = testing::random_floats(rows * cols, 10, -2, 2);
    std::vector<float> want = testing::nan_filled(rows * cols);
    ref_.silu_mul(f32_cview(gate, rows, cols), f32_cview(up, rows, cols),
                  f32_view(want, rows, cols));
    std::vector<float> got = testing::nan_filled(rows * cols);
    ops_.silu_mul(f32_cview(gate, rows, cols), f32_cview(up, rows, cols),
                  f32_view(got, rows, cols));
    testing::expect_all_near(got, want, 1e-30f, 4e-7f, "silu_mul");
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseTest,
                         ::testing::Values(Shape{1, 7}, Shape{3, 64}, Shape{5, 576},
                                           Shape{200, 576}, Shape{130, 1536}),
                         [](const auto& info) {
                             return std::to_string(info.param.rows) + "x" +
                                    std::to_string(info.param.cols);
                         });

class EmbeddingTest : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingTest, GathersTheSameBitsAsTheReference) {
    const DType dtype = GetParam();
    const int64_t vocab = 300;
    const int64_t dim = 576;
    const testing::Weights table = testing::random_weights(dtype, vocab, dim, 21);
    std::vector<int32_t> ids(150);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + 5) % vocab);
    ids[3] = 0;
    ids[4] = vocab - 1;
    const auto n = static_cast<int64_t>(ids.size());
    std::vector<float> want = testing::nan_filled(n * dim);
    ReferenceOps().embedding(ids, table.view(), f32_view(want, n, dim));
    std::vector<float> got = testing::nan_filled(n * dim);
    CpuOps({.num_threads = 2}).embedding(ids, table.view(), f32_view(got, n, dim));
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
    for (float v : got) ASSERT_FALSE(std::isnan(v));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, EmbeddingTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                           DType::kQ4_0, DType::kQ4_1),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace se
