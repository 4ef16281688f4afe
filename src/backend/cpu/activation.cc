#include "backend/cpu/activation.h"

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/simd.h"

namespace se::cpu {

namespace {

__m256 silu_mul8(__m256 g, __m256 u) {
    const __m256 e = exp256(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

}  // namespace

void silu_mul(const float* gate, const float* up, float* y, int64_t count) {
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(y + i, silu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i == count) return;
    // The last elements through the same vector code: which elements of a row end up here
    // depends on how a call splits its range, so a scalar exp would break row invariance.
    alignas(32) float g[8] = {};
    alignas(32) float u[8] = {};
    std::copy(gate + i, gate + count, g);
    std::copy(up + i, up + count, u);
    _mm256_store_ps(g, silu_mul8(_mm256_load_ps(g), _mm256_load_ps(u)));
    std::copy(g, g + (count - i), y + i);
}

void add_in_place(float* y, const float* x, int64_t count) {
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    for (; i < count; ++i) y[i] += x[i];
}

}  // namespace se::cpu
