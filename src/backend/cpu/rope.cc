#include "backend/cpu/rope.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace se::cpu {
namespace {

// out_lo = a * cos - b * sin, out_hi = b * cos + a * sin: the products and the sum rounded
// separately, as `x * cos + rotate_half(x) * sin` in PyTorch.
void rotate_neox(float* x, int32_t half, const float* cos, const float* sin) {
    int32_t i = 0;
    for (; i + 8 <= half; i += 8) {
        const __m256 a = _mm256_loadu_ps(x + i);
        const __m256 b = _mm256_loadu_ps(x + half + i);
        const __m256 c = _mm256_loadu_ps(cos + i);
        const __m256 s = _mm256_loadu_ps(sin + i);
        _mm256_storeu_ps(x + i, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
        _mm256_storeu_ps(x + half + i, _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s)));
    }
    for (; i < half; ++i) {
        const float a = x[i];
        const float b = x[half + i];
        const float ac = a * cos[i];
        const float bs = b * sin[i];
        const float bc = b * cos[i];
        const float as = a * sin[i];
        x[i] = ac - bs;
        x[half + i] = bc + as;
    }
}

// Pairs (2i, 2i + 1): out = x * cos + swap_pairs(x) * signed_sin.
void rotate_interleaved(float* x, int32_t rotary_dim, const float* cos, const float* sin) {
    int32_t i = 0;
    for (; i + 8 <= rotary_dim; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 swapped = _mm256_permute_ps(v, 0xb1);
        const __m256 vc = _mm256_mul_ps(v, _mm256_loadu_ps(cos + i));
        _mm256_storeu_ps(x + i,
                         _mm256_add_ps(vc, _mm256_mul_ps(swapped, _mm256_loadu_ps(sin + i))));
    }
    for (; i < rotary_dim; i += 2) {
        const float a = x[i];
        const float b = x[i + 1];
        const float ac = a * cos[i];
        const float bs = b * sin[i];
        const float bc = b * cos[i + 1];
        const float as = a * sin[i + 1];
        x[i] = ac + bs;
        x[i + 1] = bc + as;
    }
}

}  // namespace

void RopeTable::fill_row(int64_t i) {
    const int32_t half = rotary_dim_ / 2;
    float* cos = table_.data() + i * 2 * rotary_dim_;
    float* sin = cos + (style_ == RopeStyle::kNeox ? half : rotary_dim_);
    const auto position = static_cast<float>(positions_[i]);
    for (int32_t f = 0; f < half; ++f) {
        const float angle = position * inv_freq_[f];
        const float c = std::cos(angle);
        const float s = std::sin(angle);
        switch (style_) {
            case RopeStyle::kNeox:
                cos[f] = c;
                sin[f] = s;
                break;
            case RopeStyle::kInterleaved:
                cos[2 * f] = cos[2 * f + 1] = c;
                sin[2 * f] = -s;
                sin[2 * f + 1] = s;
                break;
        }
    }
}

void RopeTable::update(std::span<const int32_t> positions, std::span<const float> inv_freq,
                       RopeStyle style, int32_t num_threads) {
    const bool same = style == style_ && std::ranges::equal(positions, positions_) &&
                      std::ranges::equal(inv_freq, inv_freq_);
    if (same) return;
    positions_.assign(positions.begin(), positions.end());
    inv_freq_.assign(inv_freq.begin(), inv_freq.end());
    style_ = style;
    rotary_dim_ = static_cast<int32_t>(2 * inv_freq.size());
    table_.resize(positions.size() * 2 * rotary_dim_);
    const auto n = static_cast<int64_t>(positions.size());
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1 && n >= 16)
    for (int64_t i = 0; i < n; ++i) fill_row(i);
}

void rope_row(const RopeRow& r) {
    SE_CHECK(r.rotary_dim <= r.head_dim && r.rotary_dim % 2 == 0);
    const int32_t half = r.rotary_dim / 2;
    for (int64_t h = 0; h < r.num_heads; ++h) {
        float* x = r.x + h * r.head_dim;
        switch (r.style) {
            case RopeStyle::kNeox:
                rotate_neox(x, half, r.cos_sin, r.cos_sin + half);
                break;
            case RopeStyle::kInterleaved:
                rotate_interleaved(x, r.rotary_dim, r.cos_sin, r.cos_sin + r.rotary_dim);
                break;
        }
    }
}

}  // namespace se::cpu
