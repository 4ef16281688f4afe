// A normed activation's 1 / rms factor, left by the op that wrote the activation to the projection
// that reads it (Ops::matmul_add_rms_norm).
//
// rms_norm(r) · W^T = ((r ⊙ weight) · W^T) / rms(r): the norm's weight is per column and its
// 1 / rms per row, so the row factor can wait until after the next projection. A backend that
// computes the residual r inside the projection before it (o, down) knows only its own part of the
// row there; it writes r ⊙ weight and each part's sum of squares, and the next projection, which
// reads the whole row anyway, adds the parts and scales its outputs. No kernel has to sum the
// whole row between the two projections.
#pragma once

#include "core/tensor_view.h"

namespace se {

struct RmsScale {
    // f32 [rows, parts]: row r's factor is 1 / sqrt(sum_j sq_sums[r, j] / cols + eps), where cols
    // is the activation's width. An empty view: the activation is final (nothing to scale).
    ConstTensorView sq_sums;
    float eps = 0.0f;

    bool empty() const { return sq_sums.empty(); }
};

}  // namespace se
