// Greedy sampling on the device: the index of each row's largest logit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"

namespace se::cuda {

struct ArgmaxParams {
    const float* logits = nullptr;  // f32 [num_rows, row_stride], vocab used
    int32_t* out = nullptr;         // i32 [num_rows], device
    int64_t row_stride = 0;         // elements between rows, >= vocab
    int32_t num_rows = 0;
    int32_t vocab = 0;  // > 0
};

// out[r] = the index of row r's largest value; ties go to the lowest index. NaN ranks below
// every number (-inf included), so it is chosen only when the whole row is NaN, and then the
// lowest index, 0.
Status argmax(const ArgmaxParams& p, cudaStream_t stream);

}  // namespace se::cuda
