// Decode-regime matmul (few rows of x): a memory-bound pass over the compressed weights that
// dequantizes each block in registers and multiplies it with every row of x while it is hot.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace se::cpu {

// Rows of x one weight row is multiplied with per pass (register blocking).
inline constexpr int kGemvMaxRows = 4;

struct GemvArgs {
    const float* x = nullptr;     // f32 [n, k]
    const float* x_q4 = nullptr;  // Q4_0 / Q4_1 weights: x prepared by prepare_q4_activations
    int64_t n = 0;
    int64_t k = 0;
    ConstTensorView w;   // any weight dtype [out, k]
    float* y = nullptr;  // f32 [n, out]
};

// Whether gemv_rows needs x_q4 for weights of this dtype.
inline bool gemv_needs_q4_activations(DType dtype) {
    return dtype == DType::kQ4_0 || dtype == DType::kQ4_1;
}

// y[:, j] for j in [j_begin, j_end).
void gemv_rows(const GemvArgs& args, int64_t j_begin, int64_t j_end);

}  // namespace se::cpu
