// Row invariance of CpuOps::matmul (the contract of src/backend/cpu/matmul.h): every output row
// has the same bits whether its row of x is multiplied alone or at any position of a batch of
// any size, with 1 or 2 threads, by the GEMV or by the GEMM kernel. The engine relies on it to
// give a request the same tokens alone or batched, prefilled whole or in chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/matmul.h"
#include "backend_test_util.h"

namespace se {
namespace {

// Rows of x the batches are cut from: the largest batch (513) at several offsets.
constexpr int64_t kNumRows = 520;
constexpr int64_t kBatchSizes[] = {1, 2, 3, 7, 8, 9, 16, 17, 64, 513};

using MatmulFn = void (*)(const ConstTensorView&, const ConstTensorView&, TensorView,
                          cpu::Scratch&);

struct Kernel {
    const char* name;
    MatmulFn fn;
    int64_t max_rows;  // the streaming GEMV is slow on big batches: only test it up to this
};
const Kernel kKernels[] = {{"matmul", cpu::matmul, kNumRows},
                           {"gemv", cpu::matmul_gemv, 64},
                           {"gemm", cpu::matmul_gemm, kNumRows}};

using InvarianceParam = std::tuple<DType, int64_t, int64_t>;  // dtype, in, out

class MatmulInvarianceTest : public ::testing::TestWithParam<InvarianceParam> {
  protected:
    void SetUp() override {
        const auto [dtype, in, out] = GetParam();
        in_ = in;
        out_ = out;
        w_ = testing::random_weights(dtype, out, in, static_cast<uint32_t>(in * 131 + out));
        x_ = testing::random_floats(kNumRows * in, static_cast<uint32_t>(in + 7 * out));
        // The reference bits: each row alone, one thread.
        alone_ = testing::nan_filled(kNumRows * out);
        cpu::Scratch scratch(1);
        for (int64_t m = 0; m < kNumRows; ++m) {
            cpu::matmul(rows(m, 1), w_.view(), {DType::kF32, alone_.data() + m * out, 1, out},
                        scratch);
        }
    }

    ConstTensorView rows(int64_t first, int64_t n) const {
        return {DType::kF32, x_.data() + first * in_, n, in_};
    }

    // Rows [first, first + n) through `kernel`: each must equal its row computed alone.
    void check_batch(const Kernel& kernel, cpu::Scratch& scratch, int64_t first, int64_t n) {
        std::vector<float> y = testing::nan_filled(n * out_);
        kernel.fn(rows(first, n), w_.view(), {DType::kF32, y.data(), n, out_}, scratch);
        for (int64_t i = 0; i < n; ++i) {
            const size_t bytes = static_cast<size_t>(out_) * sizeof(float);
            if (std::memcmp(y.data() + i * out_, alone_.data() + (first + i) * out_, bytes) != 0) {
                ADD_FAILURE() << kernel.name << ", " << scratch.num_threads() << " threads: row "
                              << i << " of a batch of " << n << " starting at row " << first
                              << " differs from the row alone";
                return;
            }
        }
    }

    int64_t in_ = 0;
    int64_t out_ = 0;
    testing::Weights w_;
    std::vector<float> x_;
    std::vector<float> alone_;
};

TEST_P(MatmulInvarianceTest, EveryRowMatchesTheRowAlone) {
    for (int threads = 1; threads <= 2; ++threads) {
        cpu::Scratch scratch(threads);
        for (const Kernel& kernel : kKernels) {
            for (int64_t n : kBatchSizes) {
                if (n > kernel.max_rows) continue;
                // First, last and a middle position of the rows.
                for (int64_t first : {int64_t{0}, kNumRows - n, (kNumRows - n) / 2})
                    check_batch(kernel, scratch, first, n);
            }
        }
    }
}

TEST_P(MatmulInvarianceTest, CpuOpsMatchesTheKernels) {
    CpuOps ops({.num_threads = 2});
    const int64_t n = 17;
    std::vector<float> y = testing::nan_filled(n * out_);
    ops.matmul(rows(3, n), w_.view(), testing::f32_view(y, n, out_));
    EXPECT_EQ(0, std::memcmp(y.data(), alone_.data() + 3 * out_, y.size() * sizeof(float)));
}

std::string param_name(const ::testing::TestParamInfo<InvarianceParam>& info) {
    const auto [dtype, in, out] = info.param;
    return std::string(dtype_name(dtype)) + "_in" + std::to_string(in) + "_out" +
           std::to_string(out);
}

// 1536 columns span two GEMM panel chunks; 577 outputs leave a partial panel and GEMV pass.
INSTANTIATE_TEST_SUITE_P(AllDtypes, MatmulInvarianceTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16,
                                                              DType::kBF16, DType::kQ8_0,
                                                              DType::kQ4_0, DType::kQ4_1),
                                            ::testing::Values(64, 576, 1536),
                                            ::testing::Values(5, 192, 577)),
                         param_name);

// Float weights of widths that are not a multiple of 8 take the zero-padded last step.
INSTANTIATE_TEST_SUITE_P(
    OddWidths, MatmulInvarianceTest,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                       ::testing::Values(1, 13, 300), ::testing::Values(7, 23)),
    param_name);

}  // namespace
}  // namespace se
