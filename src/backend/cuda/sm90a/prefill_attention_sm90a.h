// The wgmma (sm_90a) kernel of paged prefill attention (prefill_attention.h), built in its own
// library for the sm_90a target only: prefill_attention() launches it on compute capability 9.0
// devices for head_dim 64 and 128, after checking the parameters, and the mma.sync kernel
// everywhere else.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/prefill_attention.h"

namespace se::cuda::sm90a {

// The kernel's variants, each a separate instantiation (prefill_attention_sm90a.cu says what each
// changes); all give the same bits.
enum class WgmmaVariant {
    kPingPong,    // cp.async producer; the two consumers ping-pong, no overlap within one
    kOverlap,     // + each consumer's P V under its own softmax (prefill_consumer_overlap.cuh)
    kOverlapTma,  // + K/V tiles by TMA (prefill_producer.cuh)
};

// True for the shapes this kernel takes (the rest of PrefillAttentionParams as
// prefill_attention() accepts it).
inline bool prefill_attention_supported(const PrefillAttentionParams& p) {
    return p.head_dim == 64 || p.head_dim == 128;
}

// One launch over the batch: grid x = num_seqs * tiles_per_seq (prefill_tiles.h), grid y = KV
// heads. Returns the error of the tensor-map encoding (kOverlapTma), of the attribute call or of
// the launch (cudaGetLastError).
cudaError_t launch_prefill_attention(const PrefillAttentionParams& p, int32_t tiles_per_seq,
                                     WgmmaVariant variant, cudaStream_t stream);

}  // namespace se::cuda::sm90a
