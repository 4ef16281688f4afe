#include "backend/cpu/activation.h"

#include <immintrin.h>

#include <cmath>

#include "backend/cpu/simd.h"

namespace se::cpu {

void silu_mul(const float* gate, const float* up, float* y, int64_t count) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = exp256(_mm256_xor_ps(g, sign));
        const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
    }
    for (; i < count; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add_in_place(float* y, const float* x, int64_t count) {
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    for (; i < count; ++i) y[i] += x[i];
}

}  // namespace se::cpu
