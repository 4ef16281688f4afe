// The balanced split's launch (decode_balance.h has the split, decode_balanced.cu the kernels),
// for decode_attention() to dispatch to.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/decode_attention.h"

namespace se::cuda::decode {

// Enqueues both kernels of a launch whose p.balanced_blocks > 0; p passed decode_attention's
// checks.
Status launch_balanced(const DecodeAttentionParams& p, cudaStream_t stream);

}  // namespace se::cuda::decode
