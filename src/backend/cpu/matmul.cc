#include "backend/cpu/matmul.h"

#include <omp.h>

#include <algorithm>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemv.h"
#include "core/check.h"

namespace se::cpu {
namespace {

// Below this many multiply-adds a call runs on one thread: waking others costs more.
constexpr int64_t kSerialFlops = 1 << 16;
// GEMV output rows are handed out in chunks of about out / (threads * this).
constexpr int64_t kGemvChunksPerThread = 4;
// A GEMV over fewer weight bytes than this runs on one thread: a second one saves less than the
// parallel region costs (576 x 192 Q4_1, 69 KiB, is as fast on 1 thread as on 2).
constexpr int64_t kGemvSerialBytes = 128 << 10;
// Bytes of x one GEMM item reads: about half of L2.
constexpr int64_t kRowBlockBytes = 256 << 10;
// GEMM items a thread takes at once (items are small: 4 weight rows).
constexpr int kItemsPerGrab = 4;

int32_t threads_for(int64_t multiply_adds, int32_t max_threads) {
    return multiply_adds < kSerialFlops ? 1 : max_threads;
}

void matmul_gemv_unchecked(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                           Scratch& scratch) {
    const GemvArgs args{.x = x.f32(), .n = x.rows, .k = x.cols, .w = w, .y = y.f32()};
    const int64_t weight_bytes = w.rows * w.row_bytes();
    const int32_t num_threads = weight_bytes < kGemvSerialBytes ? 1 : scratch.num_threads();
    const int64_t out = w.rows;
    const int64_t chunk = std::max<int64_t>(
        8, (out + num_threads * kGemvChunksPerThread - 1) / (num_threads * kGemvChunksPerThread));
    const int64_t num_chunks = (out + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(num_threads) if (num_threads > 1)
    for (int64_t c = 0; c < num_chunks; ++c)
        gemv_rows(args, c * chunk, std::min(out, (c + 1) * chunk));
}

void matmul_gemm_unchecked(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                           Scratch& scratch) {
    const int64_t n = x.rows;
    const int64_t k = x.cols;
    const int32_t num_threads = threads_for(n * w.rows * k, scratch.num_threads());
    const int64_t num_panels = (w.rows + kPanelRows - 1) / kPanelRows;
    // Row blocks that stay in L2 while the panels pass over them (each panel is dequantized
    // once per block).
    const int64_t fit_rows = std::max<int64_t>(kGemmMr, kRowBlockBytes / (k * 4));
    const int64_t row_blocks = (n + fit_rows - 1) / fit_rows;
    const int64_t rows_per_block = (n + row_blocks - 1) / row_blocks;
#pragma omp parallel num_threads(num_threads) if (num_threads > 1)
    {
        const int thread = omp_get_thread_num();
        float* panel = scratch.thread_floats(thread, ScratchSlot::kPanel,
                                             kPanelRows * panel_stride(std::min(k, kPanelCols)));
        float* acc =
            scratch.thread_floats(thread, ScratchSlot::kGemmAccum, rows_per_block * kPanelRows * 8);
        // Consecutive items share their row block: the threads sweep the panels over it together.
#pragma omp for schedule(dynamic, kItemsPerGrab)
        for (int64_t item = 0; item < num_panels * row_blocks; ++item) {
            const int64_t j0 = item % num_panels * kPanelRows;
            const int64_t i0 = item / num_panels * rows_per_block;
            for (int64_t k0 = 0; k0 < k; k0 += kPanelCols) {
                const int64_t kc = std::min(kPanelCols, k - k0);
                pack_panel({.w = w, .j0 = j0, .k0 = k0, .kc = kc}, panel);
                multiply_panel({.x = x.f32() + i0 * k + k0,
                                .ldx = k,
                                .n = std::min(rows_per_block, n - i0),
                                .kc = kc,
                                .panel = panel,
                                .acc = acc,
                                .first_chunk = k0 == 0,
                                .last_chunk = k0 + kc == k,
                                .y = y.f32() + i0 * y.cols + j0,
                                .ldy = y.cols,
                                .num_cols = std::min<int64_t>(kPanelRows, w.rows - j0)});
            }
        }
    }
}

void check_matmul_args(const ConstTensorView& x, const ConstTensorView& w, const TensorView& y) {
    SE_CHECK(x.cols == w.cols && y.rows == x.rows && y.cols == w.rows,
             "matmul: x [%lld, %lld], w [%lld, %lld], y [%lld, %lld]",
             static_cast<long long>(x.rows), static_cast<long long>(x.cols),
             static_cast<long long>(w.rows), static_cast<long long>(w.cols),
             static_cast<long long>(y.rows), static_cast<long long>(y.cols));
    SE_CHECK(x.dtype == DType::kF32 && y.dtype == DType::kF32);
    SE_CHECK(w.cols % dtype_block_elems(w.dtype) == 0);
    SE_CHECK(x.data != y.data, "matmul: y must not alias x");
}

}  // namespace

void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y, Scratch& scratch) {
    check_matmul_args(x, w, y);
    if (x.rows == 0 || w.rows == 0) return;
    if (x.cols == 0) {
        std::fill(y.f32(), y.f32() + y.num_elems(), 0.0f);
        return;
    }
    if (x.rows <= kGemvMaxBatch) {
        matmul_gemv_unchecked(x, w, y, scratch);
    } else {
        matmul_gemm_unchecked(x, w, y, scratch);
    }
}

void matmul_gemv(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                 Scratch& scratch) {
    check_matmul_args(x, w, y);
    if (x.rows > 0 && w.rows > 0 && x.cols > 0) matmul_gemv_unchecked(x, w, y, scratch);
}

void matmul_gemm(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                 Scratch& scratch) {
    check_matmul_args(x, w, y);
    if (x.rows > 0 && w.rows > 0 && x.cols > 0) matmul_gemm_unchecked(x, w, y, scratch);
}

}  // namespace se::cpu
