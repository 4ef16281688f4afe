// A one-warpgroup probe of the wgmma building blocks of the sm_90a prefill kernel
// (src/backend/cuda/sm90a/), for tests/backend_cuda/wgmma_probe_test.cc: it lays the inputs out
// as the kernel does (wgmma_layout.h), then runs
//   S = A[rows] B^T   (m64n128k16, both operands K-major from shared memory), and
//   O = bf16(S) V     (S's accumulators turned into A fragments in registers; V MN-major),
// and writes S and O with the accumulator layout of wgmma.cuh. A wrong descriptor, swizzle or
// fragment layout shows up here as wrong products, apart from anything attention does.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"

namespace se::cuda::testing {

struct WgmmaProbeParams {
    const bf16* a = nullptr;   // bf16 [128, head_dim], row-major: the Q tile
    const bf16* b = nullptr;   // bf16 [128, head_dim]: K (S = A B^T)
    const bf16* v = nullptr;   // bf16 [128, head_dim]: V (O = bf16(S) V)
    float* s = nullptr;        // f32 [64, 128]: rows a_row_offset .. + 63 of A times B^T
    float* o = nullptr;        // f32 [64, head_dim]
    int32_t head_dim = 128;    // 64 or 128
    int32_t a_row_offset = 0;  // 0 or 64: which consumer warpgroup's rows of the Q tile
    // false: one k16 step of each product (dims 0-15 of A and B, keys 0-15 of S and V), through
    // the raw wgmma wrappers; true: the whole products through the kernel's issue_qk / issue_pv.
    bool full = false;
};

cudaError_t run_wgmma_probe(const WgmmaProbeParams& p);

}  // namespace se::cuda::testing
