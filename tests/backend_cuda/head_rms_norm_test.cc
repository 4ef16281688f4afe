// cuda::head_rms_norm against ReferenceOps::head_rms_norm (f64 sum of squares) on the same bf16
// inputs: the kernel computes in f32 and rounds once, so it is within one bf16 rounding
// (kBf16RelTol) of the reference, plus 1e-5 relative for the f32 sum of squares over at most 256
// values and 1e-6 absolute for outputs near zero. x is the q part of fused q|k|v rows, whose k
// and v parts must keep their bits.
#include "backend/cuda/head_rms_norm.h"

#include <gtest/gtest.h>

#include <tuple>

#include "backend/cpu/reference_ops.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::upload;

constexpr float kEps = 1e-6f;

using HeadNormParam = std::tuple<int32_t, int32_t, int32_t>;  // rows, heads, head_dim

class HeadRmsNormTest : public ::testing::TestWithParam<HeadNormParam> {};

TEST_P(HeadRmsNormTest, MatchesReference) {
    const auto [rows, heads, head_dim] = GetParam();
    const int64_t cols = int64_t{heads} * head_dim;
    const int64_t stride = cols + 2 * head_dim;  // one k head and one v head after the q heads
    const std::vector<uint16_t> x =
        testing::to_bf16(testing::random_floats(rows * stride, 1, -3, 3));
    const std::vector<float> weight = testing::random_floats(head_dim, 2, 0.5f, 1.5f);

    const DeviceBuffer d_x = upload(x);
    const DeviceBuffer d_weight = upload(weight);
    const Status s = head_rms_norm({.x = d_x.as<bf16>(),
                                    .weight = d_weight.as<float>(),
                                    .row_stride = stride,
                                    .num_rows = rows,
                                    .num_heads = heads,
                                    .head_dim = head_dim,
                                    .eps = kEps},
                                   nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    std::vector<float> want(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = bf16_to_f32(x[r * stride + c]);
    }
    ReferenceOps().head_rms_norm({DType::kF32, want.data(), rows, cols}, head_dim,
                                 {DType::kF32, weight.data(), 1, head_dim}, kEps);

    const std::vector<uint16_t> got = download<uint16_t>(d_x, x.size());
    std::vector<float> got_q(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < stride; ++c) {
            const int64_t i = r * stride + c;
            if (c < cols) {
                got_q[r * cols + c] = bf16_to_f32(got[i]);
            } else {
                EXPECT_EQ(got[i], x[i]) << "k/v part changed at row " << r << ", column " << c;
            }
        }
    }
    testing::expect_all_near(got_q, want, 1e-6f, testing::kBf16RelTol + 1e-5f, "x");
}

// Row x head counts that do not fill the last block's 8 warps (1 x 1, 5 x 3) and that do.
INSTANTIATE_TEST_SUITE_P(Shapes, HeadRmsNormTest,
                         ::testing::Combine(::testing::Values(1, 5, 33),
                                            ::testing::Values(1, 3, 16),
                                            ::testing::Values(64, 128, 256)));

TEST(HeadRmsNormArgs, HeadDimNotAMultipleOf8IsInvalid) {
    const Status s =
        head_rms_norm({.row_stride = 64, .num_rows = 1, .num_heads = 1, .head_dim = 60}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace se::cuda
