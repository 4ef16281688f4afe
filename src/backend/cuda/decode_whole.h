// Decode attention over whole sequences (decode_whole_rule.h has the rule), for decode_attention()
// to dispatch to.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/decode_attention.h"

namespace se::cuda::decode {

// Enqueues the kernel of a launch whose p.whole_sequences is set; p passed decode_attention's
// checks.
Status launch_whole(const DecodeAttentionParams& p, cudaStream_t stream);

}  // namespace se::cuda::decode
