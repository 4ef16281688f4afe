// The rotation of one rope pair, shared by rope and qk_norm_rope so that both compute and round
// it alike (the fused kernel is checked bit for bit against rope).
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

// Rotates pair f of one head (global or shared memory) by position * inv_freq: the angle is an
// f32 product as HF computes it, cos and sin of that f32 in f32, the rotation in f32 from the
// bf16 values, each result rounded once.
__device__ __forceinline__ void rope_rotate_pair(__nv_bfloat16* head, RopeStyle style, int32_t f,
                                                 int32_t half, int32_t position, float inv_freq) {
    const float angle = static_cast<float>(position) * inv_freq;
    float s;
    float c;
    sincosf(angle, &s, &c);
    const int2 ab = rope_pair_of(style, f, half);
    const float a = __bfloat162float(head[ab.x]);
    const float b = __bfloat162float(head[ab.y]);
    head[ab.x] = __float2bfloat16_rn(a * c - b * s);
    head[ab.y] = __float2bfloat16_rn(b * c + a * s);
}

}  // namespace se::cuda
