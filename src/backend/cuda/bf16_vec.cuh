// Eight bf16 values as one 16-byte access: the unit every memory-bound kernel here moves, so that a
// warp's loads are 512 contiguous bytes. Callers keep rows a multiple of 8 elements and pointers
// 16-byte aligned (the launchers check).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace se::cuda {

inline constexpr int kVecElems = 8;  // bf16 per 16-byte access

__device__ __forceinline__ void bf16x8_to_float(const uint4& raw, float (&out)[kVecElems]) {
    const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < kVecElems / 2; ++i) {
        const float2 f = __bfloat1622float2(pairs[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ void load_bf16x8(const __nv_bfloat16* src, float (&out)[kVecElems]) {
    bf16x8_to_float(*reinterpret_cast<const uint4*>(src), out);
}

__device__ __forceinline__ void store_bf16x8(__nv_bfloat16* dst, const float (&in)[kVecElems]) {
    uint4 raw;
    auto* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < kVecElems / 2; ++i)
        pairs[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    *reinterpret_cast<uint4*>(dst) = raw;
}

__device__ __forceinline__ void load_f32x8(const float* src, float (&out)[kVecElems]) {
    const float4 a = reinterpret_cast<const float4*>(src)[0];
    const float4 b = reinterpret_cast<const float4*>(src)[1];
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}

__device__ __forceinline__ void store_f32x8(float* dst, const float (&in)[kVecElems]) {
    reinterpret_cast<float4*>(dst)[0] = make_float4(in[0], in[1], in[2], in[3]);
    reinterpret_cast<float4*>(dst)[1] = make_float4(in[4], in[5], in[6], in[7]);
}

// 8 elements of a sublayer's output given as bf16 (x) or as f32 (x_f32, used where x is null: a
// tensor-parallel all-reduce's sum), each f32 element rounded to bf16 first, as a matmul writing
// bf16 would have rounded it; what residual_add and add_rms_norm add to the residual.
__device__ __forceinline__ void load_act_x8(const __nv_bfloat16* x, const float* x_f32, int64_t at,
                                            float (&out)[kVecElems]) {
    if (x != nullptr) {
        load_bf16x8(x + at, out);
        return;
    }
    load_f32x8(x_f32 + at, out);
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) out[i] = __bfloat162float(__float2bfloat16(out[i]));
}

// silu(gate) * up in f32, the arithmetic every SiLU·mul kernel shares (silu_mul.cu, the fused
// GEMV epilogue), so that they give the same bits.
__device__ __forceinline__ float silu_times(float gate, float up) {
    return gate / (1.0f + expf(-gate)) * up;
}

}  // namespace se::cuda
