// Embedding gather: the first write of the residual stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

// What the row of an id outside the table becomes.
enum class EmbeddingOutside : uint8_t {
    kNan,   // the table is the whole vocabulary: the id is bad
    kZero,  // the table is a vocabulary shard: the id is another rank's (a negative one is bad)
};

struct EmbeddingParams {
    const int32_t* ids = nullptr;  // i32 [num_tokens], device
    const bf16* table = nullptr;   // bf16 [vocab_size, hidden]: the rows of ids from first_id on
    float* out = nullptr;          // f32 [num_tokens, hidden]
    int32_t num_tokens = 0;
    int32_t vocab_size = 0;  // the table's rows
    int32_t hidden = 0;      // a multiple of 8
    int32_t first_id = 0;    // the id of the table's first row (a vocabulary shard's first)
    EmbeddingOutside outside = EmbeddingOutside::kNan;
    // Where an id is fed_token_id(r) (backend/sampling_rows.h), the token is fed[r]: the last
    // sampling's tokens, on the device. Null: no id is fed.
    const int32_t* fed = nullptr;
};

// out[i] = table[ids[i] - first_id] as f32. The ids live on the device, so a bad id cannot become
// a Status: the caller validates ids on the host (the server and tokenizer do); a bad id gives a
// row of NaN, which every later check sees. With kZero, an id >= 0 outside the table gives a row
// of zeros: this rank's part of a vocabulary-parallel embedding, which an all-reduce completes.
// A fed id reads its token from p.fed first.
Status embedding(const EmbeddingParams& p, cudaStream_t stream);

}  // namespace se::cuda
