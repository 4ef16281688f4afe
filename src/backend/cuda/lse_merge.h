// The log-sum-exp merge of split-KV attention, shared by the GPU merge kernel and the host
// tests (it compiles as plain C++ too). The GPU merge finds M and the total with a block-wide
// reduction rather than lse_merge's loop, then weighs partitions by LseMerge::scale.
//
// Partition p of one (sequence, head) row covers some of its keys and keeps, over its scores s:
//   max_p = max s,   sum_p = Σ exp(s - max_p),   acc_p[d] = Σ exp(s - max_p) · v[d]
// With M = max_p max_p, the softmax over all keys is
//   out[d] = Σ_p exp(max_p - M) · acc_p[d]  /  Σ_p exp(max_p - M) · sum_p
// so partition p's accumulator enters with the factor scale(max_p) below. Every partition holds
// at least one key, so sum_p >= 1 and the denominator is never 0.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/host_device.h"

namespace se::cuda {

struct LseMerge {
    float max = 0.0f;        // M, the largest partition max
    float inv_total = 0.0f;  // 1 / Σ_p exp(max_p - M) · sum_p

    SE_HOST_DEVICE float scale(float partition_max) const {
        return expf(partition_max - max) * inv_total;
    }
};

// maxes, sums: f32 [num_partitions], num_partitions >= 1.
SE_HOST_DEVICE inline LseMerge lse_merge(const float* maxes, const float* sums,
                                         int32_t num_partitions) {
    LseMerge m;
    m.max = maxes[0];
    for (int32_t p = 1; p < num_partitions; ++p) m.max = fmaxf(m.max, maxes[p]);
    float total = 0.0f;
    for (int32_t p = 0; p < num_partitions; ++p) total += expf(maxes[p] - m.max) * sums[p];
    m.inv_total = 1.0f / total;
    return m;
}

}  // namespace se::cuda
