// The order the device's argmax follows (argmax.h, and sample_rows' greedy rows): the larger
// number, NaN below every number, the lower index on a tie (and between two NaNs). A total
// order, so a reduction's result does not depend on its shape.
#pragma once

#include <cstdint>

namespace se::cuda {

struct ArgmaxCandidate {
    float value;
    int32_t index;
};

// Whether a beats b in that order.
__device__ __forceinline__ bool beats(ArgmaxCandidate a, ArgmaxCandidate b) {
    const bool a_nan = isnan(a.value);
    const bool b_nan = isnan(b.value);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.value != b.value) return a.value > b.value;
    return a.index < b.index;
}

// The best candidate of the warp's 32, on every lane.
__device__ __forceinline__ ArgmaxCandidate warp_best(ArgmaxCandidate c) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        const ArgmaxCandidate other{__shfl_xor_sync(0xffffffffu, c.value, off),
                                    __shfl_xor_sync(0xffffffffu, c.index, off)};
        if (beats(other, c)) c = other;
    }
    return c;
}

}  // namespace se::cuda
