// The balanced split's launch (decode_balance.h has the split, decode_balanced.cu the kernels),
// for decode_attention() to dispatch to.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/decode_attention.h"

namespace se::cuda::decode {

// Whether the last block of each sequence's ranges merges its partials (else a second kernel):
// only where a sequence's partials (from at most p.balanced_blocks blocks) fit a block's shared
// memory; then under kLastBlock always, under kAuto where the second kernel would need more than
// two waves, never under kSecondKernel.
bool balanced_merges_in_block(const DecodeAttentionParams& p);

// Enqueues the kernels of a launch whose p.balanced_blocks > 0 (the first pass, and the merge
// where the last block does not merge); p passed decode_attention's checks.
Status launch_balanced(const DecodeAttentionParams& p, cudaStream_t stream);

}  // namespace se::cuda::decode
