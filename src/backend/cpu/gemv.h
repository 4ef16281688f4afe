// Decode-regime matmul (few rows of x): one memory-bound pass over the compressed weights that
// dequantizes each block in registers and multiplies it with every row of x while it is hot.
// Each (row of x, weight row) pair is one 8-lane FMA chain in matmul.h's order; a pass runs
// several weight rows side by side so that enough independent chains hide the FMA latency.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace se::cpu {

struct GemvArgs {
    const float* x = nullptr;  // f32 [n, k]
    int64_t n = 0;
    int64_t k = 0;
    ConstTensorView w;   // any weight dtype [out, k]
    float* y = nullptr;  // f32 [n, out]
};

// y[:, j] for j in [j_begin, j_end).
void gemv_rows(const GemvArgs& args, int64_t j_begin, int64_t j_end);

}  // namespace se::cpu
