// Which of the two paged prefill attention kernels runs (prefill_attention.h): the library
// chooses (kAuto) for every caller but the tests and the benchmark, which run both on the same
// inputs.
//
//   kMmaSync  FlashAttention-2 style on mma.sync (prefill_attention.cu): every device the backend
//             is built for, head_dim 64 and 128.
//   kWgmma    FlashAttention-3 style on wgmma (sm90a/prefill_attention_sm90a.cu): compute
//             capability 9.0 (H100, H200) only, head_dim 64 and 128.
//   kAuto     kWgmma where it runs, kMmaSync elsewhere.
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
};

// The kernel `requested` resolves to for these parameters on the current device: never kAuto;
// kUnsupported for kWgmma where it cannot run.
Expected<PrefillKernel> resolve_prefill_kernel(const PrefillAttentionParams& p,
                                               PrefillKernel requested);

// prefill_attention() with the kernel chosen by the caller.
Status prefill_attention(const PrefillAttentionParams& p, PrefillKernel kernel,
                         cudaStream_t stream);

}  // namespace se::cuda
