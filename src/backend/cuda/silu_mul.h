// The gated MLP's activation: out = silu(gate) * up.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct SiluMulParams {
    const bf16* gate = nullptr;  // bf16 [num_rows, in_row_stride]
    const bf16* up = nullptr;    // bf16 [num_rows, in_row_stride]
    bf16* out = nullptr;         // bf16 [num_rows, cols]; may alias gate or up if
                                 // in_row_stride == cols
    int64_t in_row_stride = 0;   // elements; cols for separate tensors, 2 * cols for a fused
                                 // gate_up row whose up half starts at gate + cols
    int32_t num_rows = 0;
    int32_t cols = 0;  // a multiple of 8
};

Status silu_mul(const SiluMulParams& p, cudaStream_t stream);

}  // namespace se::cuda
