// Inverse-frequency tables of the rope tests: plain (1 / theta^(2i / rotary_dim)) and Llama 3's
// scaled one, computed in f32 as HF does.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace se::cuda::testing {

inline std::vector<float> plain_inv_freq(int32_t rotary_dim, float theta) {
    std::vector<float> f(rotary_dim / 2);
    for (size_t i = 0; i < f.size(); ++i)
        f[i] = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
    return f;
}

// Llama 3 frequency scaling (factor 8, low/high frequency factors 1 and 4, original context
// 8192): long wavelengths slowed down, short ones kept, the band between smoothed.
inline std::vector<float> llama3_inv_freq(int32_t rotary_dim) {
    std::vector<float> f = plain_inv_freq(rotary_dim, 500000.0f);
    const float factor = 8.0f;
    const float low_wavelen = 8192.0f / 1.0f;
    const float high_wavelen = 8192.0f / 4.0f;
    for (float& x : f) {
        const float wavelen = 2.0f * static_cast<float>(M_PI) / x;
        if (wavelen > low_wavelen) {
            x /= factor;
        } else if (wavelen >= high_wavelen) {
            const float smooth = (8192.0f / wavelen - 1.0f) / (4.0f - 1.0f);
            x = (1.0f - smooth) * x / factor + smooth * x;
        }
    }
    return f;
}

}  // namespace se::cuda::testing
