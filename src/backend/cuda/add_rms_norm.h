// Fused residual add + RMSNorm, the seam between sublayers:
//   residual += x;   out = residual / rms(residual) * weight
// with rms(r) = sqrt(mean(r^2) + eps), as HF computes it in f32. With `rows`, it normalises only
// listed rows of the residual (the final norm of the rows whose logits are wanted).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct AddRmsNormParams {
    float* residual = nullptr;  // f32 [num_rows, cols], updated in place (with rows: only read)
    const bf16* x = nullptr;    // bf16 [num_rows, cols]; can be null: no add (first layer)
    // f32 [num_rows, cols] instead of x (at most one of them): each element is rounded to bf16
    // before the add, as a matmul writing bf16 would have rounded it (a tensor-parallel
    // all-reduce's f32 sum of partial products).
    const float* x_f32 = nullptr;
    const float* weight = nullptr;  // f32 [cols]
    bf16* out = nullptr;            // bf16 [num_rows, cols]
    // i32 [num_rows], device; null: row i of out is row i of residual. Else row i of out is
    // rms_norm(residual row rows[i]) (repeats and any order allowed, each index below the
    // residual's row count, which the kernel cannot check); needs x == null: nothing is added.
    const int32_t* rows = nullptr;
    int32_t num_rows = 0;  // rows of out (and of residual and x when rows is null)
    int32_t cols = 0;      // a multiple of 8
    float eps = 1e-6f;
};

Status add_rms_norm(const AddRmsNormParams& p, cudaStream_t stream);

}  // namespace se::cuda
