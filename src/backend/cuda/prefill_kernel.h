// Which of the paged prefill attention kernels runs (prefill_attention.h): the library chooses
// (kAuto) for every caller but the tests and the benchmark, which run them all on the same
// inputs.
//
//   kMmaSync       FlashAttention-2 style on mma.sync (prefill_attention.cu): every device the
//                  backend is built for, head_dim 64 and 128.
//   kWgmma         FlashAttention-3 style on wgmma (sm90a/prefill_attention_sm90a.cu), compute
//                  capability 9.0 (H100, H200) only, head_dim 64 and 128: cp.async producer, two
//                  ping-ponging consumer warpgroups (WgmmaVariant::kPingPong).
//   kWgmmaOverlap  the same, each consumer's P V under its own softmax (kOverlap).
//   kWgmmaTma      kWgmmaOverlap with the K/V tiles by TMA (kOverlapTma); needs fewer than 2^31
//                  cache slots (num_blocks * block_size).
//   kAuto          kWgmmaTma where it runs, else kWgmmaOverlap on compute capability 9.0, else
//                  kMmaSync.
// The wgmma kernels give the same bits as each other (not as kMmaSync, which sums differently).
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/prefill_attention.h"
#include "core/expected.h"
#include "core/status.h"

namespace se::cuda {

enum class PrefillKernel {
    kAuto,
    kMmaSync,
    kWgmma,
    kWgmmaOverlap,
    kWgmmaTma,
};

// The kernel `requested` resolves to for these parameters on the current device: never kAuto;
// kUnsupported for a wgmma kernel where it cannot run.
Expected<PrefillKernel> resolve_prefill_kernel(const PrefillAttentionParams& p,
                                               PrefillKernel requested);

// prefill_attention() with the kernel chosen by the caller.
Status prefill_attention(const PrefillAttentionParams& p, PrefillKernel kernel,
                         cudaStream_t stream);

}  // namespace se::cuda
