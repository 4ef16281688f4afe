// CpuOps::rope (both styles) against the direct formula, and the reuse of its cos/sin table.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference_ops.h"
#include "backend_test_util.h"

namespace se {
namespace {

std::vector<float> inv_freqs(int32_t rotary_dim, float theta) {
    std::vector<float> f(rotary_dim / 2);
    for (int32_t i = 0; i < rotary_dim / 2; ++i)
        f[i] =
            1.0f / std::pow(theta, 2.0f * static_cast<float>(i) / static_cast<float>(rotary_dim));
    return f;
}

// The rotation written out for one row, independently of both implementations.
std::vector<float> direct_formula(const std::vector<float>& x, int32_t position,
                                  const std::vector<float>& freq, RopeStyle style,
                                  int32_t head_dim) {
    std::vector<float> y = x;
    const auto half = static_cast<int32_t>(freq.size());
    for (size_t h = 0; h < x.size() / head_dim; ++h) {
        for (int32_t i = 0; i < half; ++i) {
            const float angle = static_cast<float>(position) * freq[i];
            const int64_t a = h * head_dim + (style == RopeStyle::kNeox ? i : 2 * i);
            const int64_t b = h * head_dim + (style == RopeStyle::kNeox ? i + half : 2 * i + 1);
            y[a] =
                static_cast<float>(x[a] * std::cos(double{angle}) - x[b] * std::sin(double{angle}));
            y[b] =
                static_cast<float>(x[b] * std::cos(double{angle}) + x[a] * std::sin(double{angle}));
        }
    }
    return y;
}

using RopeParam = std::tuple<RopeStyle, int32_t, int32_t>;  // style, head_dim, rotary_dim

class RopeTest : public ::testing::TestWithParam<RopeParam> {};

TEST_P(RopeTest, MatchesTheDirectFormula) {
    const auto [style, head_dim, rotary_dim] = GetParam();
    const int64_t num_heads = 3;
    const int64_t width = num_heads * head_dim;
    const std::vector<int32_t> positions = {0, 1, 2, 17, 17, 511, 4095, 100000, 5, 3, 2, 1,
                                            0, 9, 8, 7,  6,  5,   4,    3,      2, 1, 0, 70};
    const auto n = static_cast<int64_t>(positions.size());
    const std::vector<float> freq = inv_freqs(rotary_dim, 10000.0f);
    const std::vector<float> x = testing::random_floats(n * width, 31, -4, 4);
    const RopeArgs args{.inv_freq = freq, .style = style, .head_dim = head_dim};

    std::vector<float> got = x;
    CpuOps ops({.num_threads = 2});
    ops.rope(testing::f32_view(got, n, width), positions, args);
    std::vector<float> ref = x;
    ReferenceOps().rope(testing::f32_view(ref, n, width), positions, args);
    for (int64_t i = 0; i < n; ++i) {
        const std::vector<float> row(x.begin() + i * width, x.begin() + (i + 1) * width);
        const std::vector<float> want = direct_formula(row, positions[i], freq, style, head_dim);
        const std::vector<float> got_row(got.begin() + i * width, got.begin() + (i + 1) * width);
        const std::vector<float> ref_row(ref.begin() + i * width, ref.begin() + (i + 1) * width);
        // cos and sin of the same f32 angle: only the f32 rounding of the products differs.
        testing::expect_all_near(got_row, want, 4e-6f, 1e-6f, "row " + std::to_string(i));
        testing::expect_all_near(ref_row, want, 0.0f, 2e-7f, "reference row " + std::to_string(i));
    }

    // Same positions again reuse the table; new positions must not.
    std::vector<float> again = x;
    ops.rope(testing::f32_view(again, n, width), positions, args);
    EXPECT_EQ(again, got);
    std::vector<int32_t> shifted = positions;
    for (int32_t& p : shifted) p += 3;
    std::vector<float> moved = x;
    ops.rope(testing::f32_view(moved, n, width), shifted, args);
    for (int64_t i = 0; i < n; ++i) {
        const std::vector<float> row(x.begin() + i * width, x.begin() + (i + 1) * width);
        const std::vector<float> want = direct_formula(row, shifted[i], freq, style, head_dim);
        const std::vector<float> got_row(moved.begin() + i * width,
                                         moved.begin() + (i + 1) * width);
        testing::expect_all_near(got_row, want, 4e-6f, 1e-6f, "shifted row " + std::to_string(i));
    }
}

std::string param_name(const ::testing::TestParamInfo<RopeParam>& info) {
    const auto [style, head_dim, rotary_dim] = info.param;
    return std::string(style == RopeStyle::kNeox ? "neox" : "interleaved") + "_dim" +
           std::to_string(head_dim) + "_rot" + std::to_string(rotary_dim);
}

INSTANTIATE_TEST_SUITE_P(
    Styles, RopeTest,
    ::testing::Combine(::testing::Values(RopeStyle::kNeox, RopeStyle::kInterleaved),
                       ::testing::Values(64, 128), ::testing::Values(64, 32, 6)),
    param_name);

}  // namespace
}  // namespace se
