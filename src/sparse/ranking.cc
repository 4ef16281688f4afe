#include "sparse/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace se {

std::vector<int32_t> top_k(std::span<const float> scores, int32_t k) {
    const auto n = static_cast<int32_t>(scores.size());
    k = std::clamp(k, 0, n);
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) order[i] = i;
    auto key = [&](int32_t i) {
        const float s = scores[i];
        return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s;
    };
    // Higher score first; equal scores: lower index first.
    auto before = [&](int32_t a, int32_t b) {
        const float ka = key(a);
        const float kb = key(b);
        return ka != kb ? ka > kb : a < b;
    };
    std::nth_element(order.begin(), order.begin() + k, order.end(), before);
    order.resize(static_cast<size_t>(k));
    std::sort(order.begin(), order.end());
    return order;
}

std::vector<float> pool1d(std::span<const float> x, int32_t kernel, PoolKind kind) {
    SE_CHECK(kernel >= 1 && kernel % 2 == 1, "pool kernel %d must be odd and >= 1", kernel);
    const auto n = static_cast<int64_t>(x.size());
    const int32_t half = kernel / 2;
    std::vector<float> y(x.size());
    for (int64_t j = 0; j < n; ++j) {
        float acc = kind == PoolKind::kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
        for (int64_t t = j - half; t <= j + half; ++t) {
            if (t < 0 || t >= n) continue;  // padding: -inf for max, 0 for avg
            acc = kind == PoolKind::kMax ? std::max(acc, x[t]) : acc + x[t];
        }
        y[j] = kind == PoolKind::kMax ? acc : acc / static_cast<float>(kernel);
    }
    return y;
}

}  // namespace se
