// The order of the device's argmax (sample_rows' greedy rows, and rows without a finite logit): the
// larger number, NaN below every number, the lower index on a tie (and between two NaNs). A total
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

}  // namespace se::cuda
