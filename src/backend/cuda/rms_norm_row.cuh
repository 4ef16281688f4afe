// The arithmetic of one row's RMSNorm by a block of kNormThreads threads, shared by the kernels
// that normalise the residual stream (add_rms_norm.cu, and the GEMV that normalises its own input,
// gemv.cu), so that they give the same bits: thread i takes the 8-element pieces at columns
// 8i, 8i + kNormStride, ... and sums their squares in that order, the warps' sums are added by
// block_sum, and each element becomes weight * (r * inv_rms), rounded to bf16 once.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/bf16_vec.cuh"

namespace se::cuda {

inline constexpr int kNormThreads = 256;
inline constexpr int kNormWarps = kNormThreads / 32;
// Columns a thread takes in one 16-byte piece, and the row's pieces between two of its own.
inline constexpr int32_t kNormStride = kNormThreads * kVecElems;

// The sum of v over the block, in a fixed order: lanes by xor shuffles, then the warps in order.
// scratch f32 [kNormWarps]; a second call must wait for every thread to have read the first's.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kNormWarps; ++w) total += scratch[w];
    return total;
}

// One piece's squares added to sum_sq in element order.
__device__ __forceinline__ void add_squares(const float (&r)[kVecElems], float& sum_sq) {
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) sum_sq += r[i] * r[i];
}

__device__ __forceinline__ float inv_rms_of(float sum_sq, int64_t cols, float eps) {
    return rsqrtf(sum_sq / static_cast<float>(cols) + eps);
}

// r becomes weight * (r * inv_rms), the values the row's bf16 output rounds.
__device__ __forceinline__ void normalise(float (&r)[kVecElems], const float (&w)[kVecElems],
                                          float inv_rms) {
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) r[i] = w[i] * (r[i] * inv_rms);
}

}  // namespace se::cuda
