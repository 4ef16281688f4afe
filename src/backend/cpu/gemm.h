// Prefill-regime matmul (many rows of x): a panel of kPanelRows weight rows is dequantized into
// f32, one chunk of kPanelCols columns at a time, and a register tile of kGemmMr rows of x by
// kGemmNr panel rows (12 8-lane accumulators) runs over it in matmul.h's dot-product order: per
// step of 8 columns, kGemmMr loads of x and kGemmNr loads of the panel feed 12 FMAs.
//
//   panel f32 [kPanelRows, kc8]:  panel[c, k] = w_f32[j0 + c, k0 + k]  (0 past the row's end and
//                                 past the last weight row)
//   acc f32 [n, kPanelRows, 8]:   acc[i, c][l] = sum over columns k = l (mod 8) seen so far, in
//                                 order, of x[i, k] * w_f32[j0 + c, k] (one FMA chain per lane)
//   after the last chunk:         y[i, j0 + c] = hsum_pairs(acc[i, c])
//
// The tile reads 7 vectors per 12 FMAs, more than L2 can feed: the panel chunk (16 KiB) stays
// in L1 while the rows of x stream past it. Between chunks the accumulators go to memory (the
// chains just continue, exactly), so a chunk's length is a cache choice, not an arithmetic one.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace se::cpu {

inline constexpr int kGemmMr = 3;
inline constexpr int kGemmNr = 4;
inline constexpr int kPanelRows = 4;
// Columns per panel chunk: 4 x 1024 f32 = 16 KiB, and long FMA runs per tile (128 steps) to
// amortise loading and storing the accumulators. A multiple of every block size.
inline constexpr int64_t kPanelCols = 1024;

// Floats per panel row: the chunk's columns rounded up to a multiple of 8.
inline int64_t panel_stride(int64_t kc) {
    return (kc + 7) / 8 * 8;
}

struct PanelSource {
    ConstTensorView w;  // any weight dtype [out, k]
    int64_t j0 = 0;     // first weight row of the panel
    int64_t k0 = 0;     // first column (a multiple of the dtype's block size)
    int64_t kc = 0;     // columns (a multiple of the block size, or reaching the end of the row)
};

// panel f32 [kPanelRows, panel_stride(kc)] from the source.
void pack_panel(const PanelSource& src, float* panel);

struct PanelProduct {
    const float* x = nullptr;  // f32 [n, ldx], starting at column k0
    int64_t ldx = 0;
    int64_t n = 0;
    int64_t kc = 0;
    const float* panel = nullptr;  // f32 [kPanelRows, panel_stride(kc)], 32-byte aligned
    float* acc = nullptr;          // f32 [n, kPanelRows, 8], 32-byte aligned
    bool first_chunk = true;       // the accumulators start at 0 (else they are read from acc)
    bool last_chunk = true;        // reduce into y (else store the accumulators in acc)
    float* y = nullptr;            // f32 [n, ldy], starting at column j0
    int64_t ldy = 0;
    int64_t num_cols = kPanelRows;  // valid rows of the panel (<= kPanelRows)
};

// One chunk of columns for every row of x and every valid panel row.
void multiply_panel(const PanelProduct& p);

}  // namespace se::cpu
