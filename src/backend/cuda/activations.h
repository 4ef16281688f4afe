// Activation dtypes of the CUDA backend, chosen for the model path that follows (cuBLASLt bf16
// GEMMs):
//   - GEMM inputs and outputs (normed hidden states, q/k/v, attention output, gate/up, the
//     SiLU·mul product) are bf16: that is what the tensor cores read, and it halves the bytes
//     every memory-bound kernel moves;
//   - the residual stream is f32 (written by the embedding, updated by the fused residual add +
//     RMSNorm): it is one row per token, and keeping it in f32 keeps 30+ layers of additions
//     from compounding bf16 rounding, as the CPU backend's f32 residual does;
//   - norm weights and RoPE inverse frequencies are f32 (tiny; a bf16 checkpoint converts
//     exactly), and every kernel computes in f32.
// The KV cache is bf16.
#pragma once

#include <cuda_bf16.h>

namespace se::cuda {

using bf16 = __nv_bfloat16;

}  // namespace se::cuda
