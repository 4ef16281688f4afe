// RMSNorm as HF transformers computes it in f32:
//   y = weight * (x * (1 / sqrt(mean(x^2) + eps)))
#pragma once

#include <cstdint>

namespace se::cpu {

// y f32 [c] = rms_norm(x f32 [c]) * weight f32 [c]; y may alias x. Sum of squares in f32 over
// 32 lanes, like a vectorised torch reduction.
void rms_norm_row(const float* x, const float* weight, int64_t c, float eps, float* y);

}  // namespace se::cpu
