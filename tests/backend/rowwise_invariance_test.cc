// Row invariance of the element-wise and row-wise CpuOps: each output row has the same bits
// whether the op runs on that row alone (one thread) or on a batch of any size with 2 threads,
// where the threads' ranges may cut rows anywhere. Matmul and attention have their own tests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend_test_util.h"

namespace se {
namespace {

using testing::f32_cview;
using testing::f32_view;

// Rows per batch: 65 x 1540 f32 is above the threading threshold, and half of it is not a
// multiple of 8 (a thread's range ends inside a row, in the middle of a vector).
constexpr int64_t kBatchSizes[] = {1, 2, 7, 65, 130};
constexpr int64_t kCols = 1540;
constexpr int32_t kHeadDim = 70;  // 22 heads per row

// op(ops, first, n, y): writes rows [first, first + n) of the op's output into y f32 [n, kCols].
using RowOp = std::function<void(CpuOps&, int64_t, int64_t, std::vector<float>&)>;

// Every row of every batch against the row alone.
void expect_rows_invariant(const RowOp& op, const std::string& what) {
    const int64_t max_rows = 130;
    CpuOps one({.num_threads = 1});
    std::vector<float> alone(max_rows * kCols);
    for (int64_t m = 0; m < max_rows; ++m) {
        std::vector<float> y(kCols);
        op(one, m, 1, y);
        std::copy(y.begin(), y.end(), alone.begin() + m * kCols);
    }
    CpuOps two({.num_threads = 2});
    for (int64_t n : kBatchSizes) {
        const int64_t first = max_rows - n;
        std::vector<float> y(n * kCols);
        op(two, first, n, y);
        EXPECT_EQ(0, std::memcmp(y.data(), alone.data() + first * kCols, y.size() * sizeof(float)))
            << what << ": a batch of " << n << " rows differs from its rows alone";
    }
}

class RowwiseInvarianceTest : public ::testing::Test {
  protected:
    std::vector<float> a_ = testing::random_floats(130 * kCols, 1, -6.0f, 6.0f);
    std::vector<float> b_ = testing::random_floats(130 * kCols, 2, -2.0f, 2.0f);
    std::vector<float> weight_ = testing::random_floats(kCols, 3, 0.5f, 1.5f);

    ConstTensorView rows(const std::vector<float>& v, int64_t first, int64_t n) const {
        return {DType::kF32, v.data() + first * kCols, n, kCols};
    }
    // y = rows of a_, for the in-place ops.
    void load_a(int64_t first, int64_t n, std::vector<float>& y) const {
        std::copy(a_.begin() + first * kCols, a_.begin() + (first + n) * kCols, y.begin());
    }
};

TEST_F(RowwiseInvarianceTest, SiluMul) {
    expect_rows_invariant(
        [&](CpuOps& ops, int64_t first, int64_t n, std::vector<float>& y) {
            ops.silu_mul(rows(a_, first, n), rows(b_, first, n), f32_view(y, n, kCols));
        },
        "silu_mul");
}

TEST_F(RowwiseInvarianceTest, AddAndAddBias) {
    expect_rows_invariant(
        [&](CpuOps& ops, int64_t first, int64_t n, std::vector<float>& y) {
            load_a(first, n, y);
            ops.add(f32_view(y, n, kCols), rows(b_, first, n));
            ops.add_bias(f32_view(y, n, kCols), f32_cview(weight_, 1, kCols));
        },
        "add, add_bias");
}

TEST_F(RowwiseInvarianceTest, RmsNormAndHeadRmsNorm) {
    const std::vector<float> head_weight = testing::random_floats(kHeadDim, 4, 0.5f, 1.5f);
    expect_rows_invariant(
        [&](CpuOps& ops, int64_t first, int64_t n, std::vector<float>& y) {
            ops.rms_norm(rows(a_, first, n), f32_cview(weight_, 1, kCols), 1e-5f,
                         f32_view(y, n, kCols));
            ops.head_rms_norm(f32_view(y, n, kCols), kHeadDim, f32_cview(head_weight, 1, kHeadDim),
                              1e-6f);
        },
        "rms_norm, head_rms_norm");
}

TEST_F(RowwiseInvarianceTest, Rope) {
    std::vector<float> inv_freq(kHeadDim / 2);
    for (size_t f = 0; f < inv_freq.size(); ++f)
        inv_freq[f] = std::pow(10000.0f, -2.0f * static_cast<float>(f) / kHeadDim);
    std::vector<int32_t> positions(130);
    std::iota(positions.begin(), positions.end(), 4000);
    for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
        expect_rows_invariant(
            [&](CpuOps& ops, int64_t first, int64_t n, std::vector<float>& y) {
                load_a(first, n, y);
                ops.rope(f32_view(y, n, kCols),
                         std::span<const int32_t>(positions).subspan(first, n),
                         {.inv_freq = inv_freq, .style = style, .head_dim = kHeadDim});
            },
            style == RopeStyle::kNeox ? "rope (neox)" : "rope (interleaved)");
    }
}

}  // namespace
}  // namespace se
