// Conversion of weight rows (any weight dtype) to f32.
//
// Values, each rounded once to f32: F16/BF16 exact; Q8_0 d * q; Q4_0 d * (q - 8);
// Q4_1 fma(d, q, m) (d * q + m without the intermediate rounding).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace se {

// dst f32 [n] = src dtype [n]; n must be a multiple of the dtype's block size. AVX2 version.
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n);

// Same values, plain scalar code: the reference the fast version is tested against.
void dequantize_row_reference(DType dtype, const void* src, float* dst, int64_t n);

}  // namespace se
