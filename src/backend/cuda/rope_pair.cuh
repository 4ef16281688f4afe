// The rotation of one rope pair, shared by rope, qk_norm_rope and the decode GEMV's RoPE epilogue
// so that all compute and round it alike (each fused kernel is checked bit for bit against the
// unfused path).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backend/ops.h"

namespace se::cuda {

// Element indices (a, b) of rotation pair f inside one head.
__device__ __forceinline__ int2 rope_pair_of(RopeStyle style, int32_t f, int32_t half) {
    switch (style) {
        case RopeStyle::kNeox:
            return make_int2(f, f + half);
        case RopeStyle::kInterleaved:
            return make_int2(2 * f, 2 * f + 1);
    }
    return make_int2(0, 0);  // unreachable: the launchers accept only the two styles
}

// The rotation of one pair's bf16 values (a, b) by position * inv_freq: the angle is an f32
// product as HF computes it, cos and sin of that f32 in f32, the rotation in f32, each result
// rounded once. rope_rotate_pair and the decode GEMV's fused epilogue (gemv.cu) both call it.
__device__ __forceinline__ __nv_bfloat162 rope_rotate(float a, float b, int32_t position,
                                                      float inv_freq) {
    const float angle = static_cast<float>(position) * inv_freq;
    float s;
    float c;
    sincosf(angle, &s, &c);
    return __nv_bfloat162(__float2bfloat16_rn(a * c - b * s), __float2bfloat16_rn(b * c + a * s));
}

// Rotates pair f of one head (global or shared memory) by position * inv_freq (rope_rotate).
__device__ __forceinline__ void rope_rotate_pair(__nv_bfloat16* head, RopeStyle style, int32_t f,
                                                 int32_t half, int32_t position, float inv_freq) {
    const int2 ab = rope_pair_of(style, f, half);
    const __nv_bfloat162 out =
        rope_rotate(__bfloat162float(head[ab.x]), __bfloat162float(head[ab.y]), position, inv_freq);
    head[ab.x] = out.x;
    head[ab.y] = out.y;
}

}  // namespace se::cuda
