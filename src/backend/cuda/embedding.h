// Embedding gather: the first write of the residual stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

struct EmbeddingParams {
    const int32_t* ids = nullptr;  // i32 [num_tokens], device
    const bf16* table = nullptr;   // bf16 [vocab_size, hidden]
    float* out = nullptr;          // f32 [num_tokens, hidden]
    int32_t num_tokens = 0;
    int32_t vocab_size = 0;
    int32_t hidden = 0;  // a multiple of 8
};

// out[i] = table[ids[i]] as f32. The ids live on the device, so a bad id cannot become a Status:
// the caller validates ids on the host (the server and tokenizer do); an id outside
// [0, vocab_size) gives a row of NaN, which every later check sees.
Status embedding(const EmbeddingParams& p, cudaStream_t stream);

}  // namespace se::cuda
