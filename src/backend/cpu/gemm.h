// Prefill-regime matmul (many rows of x): a panel of weight rows is dequantized once into a
// transposed f32 panel, then a register-blocked FMA micro-kernel multiplies every row of x with
// it (kGemmMr rows of x x kGemmNr weight rows per step, 12 accumulators).
//
//   panel f32 [kc, kGemmNr]:  panel[k * kGemmNr + c] = w[j0 + c, k0 + k]   (0 past the last row)
//   y[i, j0 + c] (+)= sum_k x[i, k0 + k] * panel[k, c]
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace se::cpu {

inline constexpr int kGemmMr = 6;
inline constexpr int kGemmNr = 16;

struct PanelSource {
    ConstTensorView w;  // any weight dtype [out, k]
    int64_t j0 = 0;     // first weight row of the panel
    int64_t k0 = 0;     // first column (a multiple of the dtype's block size)
    int64_t kc = 0;     // columns (a multiple of the block size, or reaching the end of the row)
};

// panel f32 [kc, kGemmNr] from the source; rows_tmp f32 [kGemmNr, kc] is scratch.
void pack_panel(const PanelSource& src, float* rows_tmp, float* panel);

struct PanelProduct {
    const float* x = nullptr;  // f32 [n, ldx], starting at column k0
    int64_t ldx = 0;
    int64_t n = 0;
    const float* panel = nullptr;  // f32 [kc, kGemmNr], 32-byte aligned
    int64_t kc = 0;
    float* y = nullptr;  // f32 [n, ldy], starting at column j0
    int64_t ldy = 0;
    int64_t num_cols = kGemmNr;  // valid columns of the panel (<= kGemmNr)
    bool accumulate = false;     // add to y instead of overwriting it
};

void multiply_panel(const PanelProduct& p);

}  // namespace se::cpu
