// Elementwise dtype conversion between f32 and bf16 over strided rows: logits and hidden states
// crossing between f32 consumers (the residual stream, sampling) and bf16 GEMMs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct ConvertF32ToBf16Params {
    const float* in = nullptr;  // f32 [num_rows, in_stride], cols used
    bf16* out = nullptr;        // bf16 [num_rows, out_stride], cols written
    int64_t in_stride = 0;      // elements between rows of in, >= cols
    int64_t out_stride = 0;     // elements between rows of out, >= cols
    int32_t num_rows = 0;
    int32_t cols = 0;
};

// out = in rounded to nearest even; NaN stays NaN with its sign and top payload bits, bit for bit
// as core/half.h's f32_to_bf16.
Status convert_f32_to_bf16(const ConvertF32ToBf16Params& p, cudaStream_t stream);

struct ConvertBf16ToF32Params {
    const bf16* in = nullptr;  // bf16 [num_rows, in_stride], cols used
    float* out = nullptr;      // f32 [num_rows, out_stride], cols written
    int64_t in_stride = 0;     // elements between rows of in, >= cols
    int64_t out_stride = 0;    // elements between rows of out, >= cols
    int32_t num_rows = 0;
    int32_t cols = 0;
};

// out = in, exactly (every bf16 is an f32).
Status convert_bf16_to_f32(const ConvertBf16ToF32Params& p, cudaStream_t stream);

}  // namespace se::cuda
