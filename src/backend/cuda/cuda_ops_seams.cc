// CudaOps: the seam between two sublayers folded into the GEMVs on either side of it, for decode
// steps of one token. The row-parallel projection (o, down) adds its product to the residual
// stream in its epilogue (GemvEpilogue::kAddResidual), and the next sublayer's first projection
// (q|k|v, gate|up) normalises the residual stream itself as it stages its x (GemvInputNorm): the
// add_rms_norm launch between them drops out, with its bits. At 2..8 rows every CTA would
// normalise the rows one after another; not measured, so those steps keep add_rms_norm.
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemv.h"

namespace se::cuda {
namespace {

constexpr int64_t kFoldedRows = 1;  // steps of this many tokens fold their seams

}  // namespace

bool CudaOps::folds_residual_norm(int64_t rows) const {
    return rows <= kFoldedRows;
}

GemvInputNorm CudaOps::folded_norm(const InputNorm& in) const {
    const ConstTensorView& r = in.residual;
    const bool foldable =
        r.rows > 0 && r.rows <= kGemvMaxNormedRows && r.dtype == DType::kF32 &&
        in.weight.dtype == DType::kF32 && in.weight.cols == r.cols &&
        gemv_staged_bytes(static_cast<int32_t>(r.rows), r.cols) <= kGemvMaxStagedBytes;
    if (!foldable) return {};
    return {.residual = r.f32(), .ld = r.cols, .weight = in.weight.f32(), .eps = in.eps};
}

void CudaOps::matmul_add(const ConstTensorView& x, const ConstTensorView& w, TensorView residual,
                         TensorView scratch) {
    if (x.rows > kGemvMaxRows || x.rows == 0) {
        Ops::matmul_add(x, w, residual, scratch);
        return;
    }
    const Timed timed(*this, "matmul_add");
    SE_CHECK(x.cols == w.cols && residual.dtype == DType::kF32 && residual.rows == x.rows &&
                 residual.cols == w.rows,
             "matmul_add: x [%ld, %ld] w [%ld, %ld] residual [%ld, %ld]", x.rows, x.cols, w.rows,
             w.cols, residual.rows, residual.cols);
    if (replaying()) return;
    run_gemv(x, {&w, 1}, {&residual, 1}, GemvEpilogue::kAddResidual);
}

void CudaOps::norm_project_silu_mul(const InputNorm& in, std::span<const ConstTensorView> ws,
                                    std::span<const TensorView> ys, TensorView y) {
    SE_CHECK(ws.size() == 2 && ys.size() == 2);
    const GemvInputNorm norm = folded_norm(in);
    if (norm.residual == nullptr) {
        Ops::norm_project_silu_mul(in, ws, ys, y);
        return;
    }
    silu_mul_projection(in.x, norm, ws, ys, y);
}

}  // namespace se::cuda
