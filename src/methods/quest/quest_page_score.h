// The Quest page score: from a page's elementwise key minimum m and maximum M, an upper bound of
// the query's dot product with every key of the page (no softmax scale: it only ranks pages):
//
//   u = sum_d max(q_d * M_d, q_d * m_d)   >=   max_{t in page} q . k_t
//
// since q_d * k_{t,d} <= max(q_d * M_d, q_d * m_d) for every d whatever the sign of q_d.
#pragma once

#include <algorithm>
#include <cstdint>

namespace se {

// q, key_min, key_max: f32 [head_dim].
inline float page_upper_bound(const float* q, const float* key_min, const float* key_max,
                              int32_t head_dim) {
    float u = 0.0f;
    for (int32_t d = 0; d < head_dim; ++d) u += std::max(q[d] * key_max[d], q[d] * key_min[d]);
    return u;
}

}  // namespace se
