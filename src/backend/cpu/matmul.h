// y = x · w^T for any weight dtype: picks the decode (GEMV) or prefill (GEMM) kernel and splits
// the work over threads.
#pragma once

#include <cstdint>

#include "backend/cpu/scratch.h"
#include "core/tensor_view.h"

namespace se::cpu {

// Up to this many rows of x, matmul streams the compressed weights (GEMV); above, it
// dequantizes panels and runs the GEMM micro-kernel.
inline constexpr int64_t kGemvMaxBatch = 8;

// y f32 [n, out] = x f32 [n, in] · w^T, w any weight dtype [out, in]. Uses up to
// scratch.num_threads() threads.
void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y, Scratch& scratch);

// The two regimes on their own (same contract as matmul), for benchmarks that look for the
// crossover between them.
void matmul_gemv(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                 Scratch& scratch);
void matmul_gemm(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                 Scratch& scratch);

}  // namespace se::cpu
