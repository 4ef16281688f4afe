#include "backend/cpu/norm.h"

#include <immintrin.h>

#include <cmath>

#include "backend/cpu/simd.h"

namespace se::cpu {

void rms_norm_row(const float* x, const float* weight, int64_t c, float eps, float* y) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= c; i += 32) {
#pragma GCC unroll 8
        for (int u = 0; u < 4; ++u) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * u);
            acc[u] = _mm256_fmadd_ps(v, v, acc[u]);
        }
    }
    for (; i + 8 <= c; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        acc[0] = _mm256_fmadd_ps(v, v, acc[0]);
    }
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < c; ++i) sum += x[i] * x[i];
    const float mean = sum / static_cast<float>(c);
    const float inv_rms = 1.0f / std::sqrt(mean + eps);
    const __m256 s = _mm256_set1_ps(inv_rms);
    i = 0;
    for (; i + 8 <= c; i += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(weight + i), v));
    }
    for (; i < c; ++i) y[i] = weight[i] * (x[i] * inv_rms);
}

}  // namespace se::cpu
