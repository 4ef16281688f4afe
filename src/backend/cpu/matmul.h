// y = x · w^T for any weight dtype: picks the decode (GEMV) or prefill (GEMM) kernel and splits
// the work over threads.
//
// Row invariance. Every output element is computed with ONE arithmetic, whichever kernel, batch
// size, position in the batch or thread count produces it ("dot-product order"):
//
//   w_f32[j, :]  the exact dequantized weight row (dequant.h): F32/F16/BF16 as is, Q8_0 d * q,
//                Q4_0 d * (q - 8), Q4_1 fma(d, q, m), each rounded once to f32
//   x[m, :], w_f32[j, :] zero-padded to k8 = 8 * ceil(k / 8)
//
//        k:   0 1 2 3 4 5 6 7 | 8 9 ...          15 | ... | k8-8 ...  k8-1
//   lane l:   0 1 2 3 4 5 6 7 | 0 1 ...           7 | ... |  0   ...   7
//   acc[l] = 0;  for c = 0, 8, ..., k8 - 8:  acc[l] = fma(x[m, c + l], w_f32[j, c + l], acc[l])
//   y[m, j] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
//
// so y[m, j] is a function of x[m, :] and weight row j only. The decode GEMV dequantizes each
// block in registers and runs several such chains side by side (weight rows x rows of x); the
// prefill GEMM dequantizes a panel of weight rows into f32 once and runs a register tile of
// chains (rows of x x weight rows) over the whole of k. Both reduce with simd.h's hsum_pairs
// order. Any new kernel must keep this arithmetic: tests/backend/matmul_invariance_test.cc
// compares every row bit for bit across batch sizes, positions, thread counts and kernels.
#pragma once

#include <cstdint>

#include "backend/cpu/scratch.h"
#include "core/tensor_view.h"

namespace se::cpu {

// Up to this many rows of x, matmul streams the compressed weights (GEMV); above, it
// dequantizes panels and runs the GEMM micro-kernel, which wins from 4 rows on (the GEMV decodes
// each block once per 3 rows of x, the GEMM once per block of rows). Either gives the same bits:
// this is a speed choice only.
inline constexpr int64_t kGemvMaxBatch = 3;

// y f32 [n, out] = x f32 [n, in] · w^T, w any weight dtype [out, in]. Uses up to
// scratch.num_threads() threads.
void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y, Scratch& scratch);

// The two regimes on their own (same contract and same bits as matmul), for benchmarks that
// look for the crossover between them and for the invariance tests.
void matmul_gemv(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                 Scratch& scratch);
void matmul_gemm(const ConstTensorView& x, const ConstTensorView& w, TensorView y,
                 Scratch& scratch);

}  // namespace se::cpu
