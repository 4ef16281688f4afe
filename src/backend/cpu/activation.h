// Element-wise kernels over flat f32 ranges: SwiGLU's silu(gate) * up, residual and bias adds.
#pragma once

#include <cstdint>

namespace se::cpu {

// y f32 [count] = gate / (1 + exp(-gate)) * up, as torch's silu then a multiply.
void silu_mul(const float* gate, const float* up, float* y, int64_t count);

// y f32 [count] += x f32 [count]
void add_in_place(float* y, const float* x, int64_t count);

}  // namespace se::cpu
