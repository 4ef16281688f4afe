// cuda::silu_mul against ReferenceOps::silu_mul (f64), on separate gate/up tensors and on a fused
// gate_up row. Tolerance: one bf16 rounding (kBf16RelTol) plus 1e-5 relative for f32 expf and
// division, and 1e-6 absolute for outputs near zero.
#include "backend/cuda/silu_mul.h"

#include <gtest/gtest.h>

#include "backend/cpu/reference_ops.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download_bf16;
using testing::poisoned;
using testing::upload_bf16;

std::vector<float> reference(const std::vector<float>& gate, const std::vector<float>& up,
                             int32_t rows, int32_t cols) {
    std::vector<float> want(gate.size());
    ReferenceOps().silu_mul({DType::kF32, gate.data(), rows, cols},
                            {DType::kF32, up.data(), rows, cols},
                            {DType::kF32, want.data(), rows, cols});
    return want;
}

class SiluMulTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(SiluMulTest, SeparateGateAndUp) {
    const int32_t cols = GetParam();
    const int32_t rows = 5;
    const int64_t n = int64_t{rows} * cols;
    const std::vector<float> gate = testing::random_bf16_values(n, 1, -12, 12);
    const std::vector<float> up = testing::random_bf16_values(n, 2, -3, 3);
    const DeviceBuffer d_gate = upload_bf16(gate);
    const DeviceBuffer d_up = upload_bf16(up);
    const DeviceBuffer d_out = poisoned(2 * n);
    const Status s = silu_mul({.gate = d_gate.as<bf16>(),
                               .up = d_up.as<bf16>(),
                               .out = d_out.as<bf16>(),
                               .in_row_stride = cols,
                               .num_rows = rows,
                               .cols = cols},
                              nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    testing::expect_all_near(download_bf16(d_out, n), reference(gate, up, rows, cols), 1e-6f,
                             testing::kBf16RelTol + 1e-5f, "out");
}

TEST_P(SiluMulTest, FusedGateUpRows) {
    const int32_t cols = GetParam();
    const int32_t rows = 3;
    const std::vector<float> gate_up =
        testing::random_bf16_values(int64_t{rows} * 2 * cols, 3, -12, 12);
    std::vector<float> gate;
    std::vector<float> up;
    for (int32_t r = 0; r < rows; ++r) {
        const auto row = gate_up.begin() + int64_t{r} * 2 * cols;
        gate.insert(gate.end(), row, row + cols);
        up.insert(up.end(), row + cols, row + 2 * cols);
    }
    const DeviceBuffer d_gate_up = upload_bf16(gate_up);
    const DeviceBuffer d_out = poisoned(2 * int64_t{rows} * cols);
    const Status s = silu_mul({.gate = d_gate_up.as<bf16>(),
                               .up = d_gate_up.as<bf16>() + cols,
                               .out = d_out.as<bf16>(),
                               .in_row_stride = 2 * int64_t{cols},
                               .num_rows = rows,
                               .cols = cols},
                              nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    testing::expect_all_near(download_bf16(d_out, int64_t{rows} * cols),
                             reference(gate, up, rows, cols), 1e-6f, testing::kBf16RelTol + 1e-5f,
                             "out");
}

INSTANTIATE_TEST_SUITE_P(Cols, SiluMulTest, ::testing::Values(8, 1536, 8200));

}  // namespace
}  // namespace se::cuda
