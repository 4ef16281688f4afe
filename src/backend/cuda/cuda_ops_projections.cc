// CudaOps: the projections. A decode step's few rows go through the GEMV (gemv.h), every
// projection of one input in one launch, with the epilogue that fuses what follows (SiLU·mul; at
// one row the residual add and RMSNorm after o and down, whose 1 / rms the next projection
// applies); larger steps through cuBLASLt.
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_ops_args.h"
#include "backend/cuda/gemv.h"

namespace se::cuda {

void CudaOps::matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) {
    run_projections(y.dtype == DType::kF32 ? "lm_head" : "matmul", x, {}, {&w, 1}, {&y, 1});
}

void CudaOps::project(const ConstTensorView& x, const RmsScale& x_scale,
                      std::span<const ConstTensorView> ws, std::span<const TensorView> ys) {
    run_projections("matmul", x, x_scale, ws, ys);
}

void CudaOps::run_projections(const char* op, const ConstTensorView& x, const RmsScale& x_scale,
                              std::span<const ConstTensorView> ws, std::span<const TensorView> ys) {
    const Timed timed(*this, op);
    SE_CHECK(ws.size() == ys.size());
    for (size_t i = 0; i < ws.size(); ++i) {
        const ConstTensorView& w = ws[i];
        const TensorView& y = ys[i];
        SE_CHECK(x.cols == w.cols && y.cols == w.rows && y.rows == x.rows,
                 "matmul: x [%ld, %ld] w [%ld, %ld] y [%ld, %ld]", x.rows, x.cols, w.rows, w.cols,
                 y.rows, y.cols);
        SE_CHECK(y.dtype == DType::kBF16 || y.dtype == DType::kF32);
    }
    // A decode step's few rows: the weights stream once, every projection of x in one launch.
    const bool gemv_rows =
        x.rows <= kGemvMaxRows && ws.size() <= static_cast<size_t>(kGemvMaxSegments);
    SE_CHECK(x_scale.empty() || gemv_rows,
             "cuda backend: a pending RMS scale on %ld rows of x and %zu projections", x.rows,
             ws.size());
    if (x.rows == 0 || replaying()) return;
    if (gemv_rows) {
        run_gemv(x, x_scale, ws, ys, GemvEpilogue::kStore);
        return;
    }
    for (size_t i = 0; i < ws.size(); ++i) {
        must(gemm_.run({.a = bf16_data(x, "matmul input"),
                        .w = bf16_data(ws[i], "matmul weight"),
                        .d = ys[i].data,
                        .m = x.rows,
                        .shape = {.n = ws[i].rows,
                                  .k = ws[i].cols,
                                  .lda = x.cols,
                                  .ldd = ys[i].cols,
                                  .d_dtype = ys[i].dtype,
                                  .beta = 0.0f}},
                       stream_.get()));
    }
}

void CudaOps::run_gemv(const ConstTensorView& x, const RmsScale& x_scale,
                       std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                       GemvEpilogue epilogue) {
    must(gemv(gemv_params(x, x_scale, ws, ys, epilogue), stream_.get()));
}

GemvParams CudaOps::gemv_params(const ConstTensorView& x, const RmsScale& x_scale,
                                std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                                GemvEpilogue epilogue) const {
    GemvParams p{.x = bf16_data(x, "matmul input"),
                 .ldx = x.cols,
                 .m = static_cast<int32_t>(x.rows),
                 .k = x.cols,
                 .segments = {},
                 .num_segments = static_cast<int32_t>(ws.size()),
                 .epilogue = epilogue,
                 .device = &gemv_device_};
    for (size_t i = 0; i < ws.size(); ++i) {
        p.segments[i] = {.w = bf16_data(ws[i], "matmul weight"),
                         .y = ys[i].data,
                         .n = ws[i].rows,
                         .ldy = ys[i].cols,
                         .y_dtype = ys[i].dtype};
    }
    if (!x_scale.empty()) {
        // What matmul_add_rms_norm hands out: one row, one sum per 16 columns of x.
        const ConstTensorView& sums = x_scale.sq_sums;
        SE_CHECK(x.rows == 1 && sums.rows == 1 && sums.cols == gemv_norm_sums(x.cols),
                 "cuda backend: an RMS scale of [%ld, %ld] sums for x [%ld, %ld]", sums.rows,
                 sums.cols, x.rows, x.cols);
        p.x_scale = {.sq_sums = f32_data(sums, "RMS scale sums"), .eps = x_scale.eps};
    }
    return p;
}

void CudaOps::project_silu_mul(const ConstTensorView& x, const RmsScale& x_scale,
                               std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                               TensorView y) {
    SE_CHECK(ws.size() == 2 && ys.size() == 2);
    if (x.rows > kGemvMaxRows) {
        Ops::project_silu_mul(x, x_scale, ws, ys, y);
        return;
    }
    const Timed timed(*this, "matmul");
    SE_CHECK(ws[0].rows == ws[1].rows && ws[0].cols == x.cols && ws[1].cols == x.cols &&
                 y.rows == x.rows && y.cols == ws[0].rows && y.dtype == DType::kBF16,
             "project_silu_mul: x [%ld, %ld] gate [%ld, %ld] up [%ld, %ld] y [%ld, %ld]", x.rows,
             x.cols, ws[0].rows, ws[0].cols, ws[1].rows, ws[1].cols, y.rows, y.cols);
    if (x.rows == 0 || replaying()) return;
    // The fused kernel writes silu(gate) * up to segment 0's output: y, not the gate storage.
    const TensorView outs[] = {y, ys[1]};
    run_gemv(x, x_scale, ws, outs, GemvEpilogue::kSiluMul);
}

RmsScale CudaOps::matmul_add_rms_norm(const ConstTensorView& x, const ConstTensorView& w,
                                      TensorView product, TensorView residual,
                                      const ConstTensorView& weight, float eps, TensorView y) {
    const int64_t parts = gemv_norm_sums(w.rows);
    const int64_t capacity = static_cast<int64_t>(norm_sq_sums_.size_bytes() / sizeof(float));
    // One row (a batch-1 decode step) into bf16: the GEMV's kResidualNorm epilogue. Otherwise
    // the projection, then the fused residual add + RMSNorm.
    if (x.rows != 1 || y.dtype != DType::kBF16 || parts > capacity) {
        return Ops::matmul_add_rms_norm(x, w, product, residual, weight, eps, y);
    }
    const Timed timed(*this, "matmul_add_rms_norm");
    SE_CHECK(x.cols == w.cols && residual.dtype == DType::kF32 && residual.rows == 1 &&
                 residual.cols == w.rows && y.rows == 1 && y.cols == w.rows &&
                 weight.cols == w.rows,
             "matmul_add_rms_norm: x [%ld, %ld] w [%ld, %ld] residual [%ld, %ld] weight [%ld, "
             "%ld] y [%ld, %ld]",
             x.rows, x.cols, w.rows, w.cols, residual.rows, residual.cols, weight.rows, weight.cols,
             y.rows, y.cols);
    const RmsScale scale{.sq_sums = ConstTensorView{DType::kF32, norm_sq_sums_.data(), 1, parts},
                         .eps = eps};
    if (replaying()) return scale;
    GemvParams p = gemv_params(x, RmsScale{}, {&w, 1}, {&y, 1}, GemvEpilogue::kResidualNorm);
    p.norm = {.residual = residual.f32(),
              .weight = f32_data(weight, "norm weight"),
              .sq_sums = norm_sq_sums_.as<float>()};
    must(gemv(p, stream_.get()));
    return scale;
}

}  // namespace se::cuda
