// GEMV kernels for Q4_0 / Q4_1 weights. The activations are rearranged once per call so that a
// block's nibbles become f32 with one AND and one conversion each, without shuffles:
//
//   the 16 bytes of nibbles are read as 4 words w and duplicated in both halves of a vector;
//   lane L (word L % 4, half h = L / 4) of vector c keeps one nibble in place (a mask), and the
//   conversion gives q * 2^s. The prepared activation at that lane is x[e] * 2^-s (exact), with
//   e = 4 * (L % 4) + c + 16 * h, so the products are exactly x[e] * q.
//
// Each prepared block also carries the f32x4 the block's scale/minimum pair is multiplied by to
// add the constant part of the weights: (d, m, 0, 0) . (0, sum x, 0, 0) for Q4_1 and
// (d, 0, 0, 0) . (-8 sum x, 0, 0, 0) for Q4_0.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace se::cpu {

// f32 per prepared block: 32 rearranged activations + 4 for the constant term.
inline constexpr int64_t kQ4PreparedBlock = 36;

// prepared f32 [n, k / 32, kQ4PreparedBlock] from x f32 [n, k]; dtype Q4_0 or Q4_1.
void prepare_q4_activations(DType dtype, const float* x, int64_t n, int64_t k, float* prepared);

struct GemvQ4Pass {
    const float* prepared[4] = {};  // rows of prepared activations, `num_rows` of them
    int64_t num_blocks = 0;         // k / 32
    const void* w = nullptr;        // Q4_0 / Q4_1 [out, k]
    float* y[4] = {};               // output rows (f32 [out] each)
};

// y[r][j] for j in [j_begin, j_end), r < R (1..4).
template <int R>
void gemv_q4_0(const GemvQ4Pass& pass, int64_t j_begin, int64_t j_end);
template <int R>
void gemv_q4_1(const GemvQ4Pass& pass, int64_t j_begin, int64_t j_end);

}  // namespace se::cpu
