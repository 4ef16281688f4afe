// In-register decoding of GGUF weight blocks into f32 vectors, for the matmul kernels and the
// vectorised dequantize_row. Element order matches core/quant_blocks.h: v[c] holds elements
// [8c, 8c + 8) of the block.
#pragma once

#include <immintrin.h>

#include "backend/cpu/simd.h"
#include "core/quant_blocks.h"

namespace se::cpu {

// The 32 unsigned nibbles of a Q4 block as f32 0..15 (the scale is not applied).
inline void decode_nibbles(const uint8_t* qs, __m256 v[4]) {
    const __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs)));
    const __m256i b =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8)));
    const __m256i low = _mm256_set1_epi32(0x0f);
    v[0] = _mm256_cvtepi32_ps(_mm256_and_si256(a, low));  // low nibbles of bytes 0..7
    v[1] = _mm256_cvtepi32_ps(_mm256_and_si256(b, low));  // low nibbles of bytes 8..15
    v[2] = _mm256_cvtepi32_ps(_mm256_srli_epi32(a, 4));   // high nibbles of bytes 0..7
    v[3] = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));   // high nibbles of bytes 8..15
}

// The 32 signed bytes of a Q8_0 block as f32 (the scale is not applied).
inline void decode_int8(const int8_t* qs, __m256 v[4]) {
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * c));
        v[c] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
    }
}

// The f16 values at p and p + 1 (2 bytes each) as f32, repeated: (v0, v1, v0, v1, ...). The
// 4 bytes come in with a broadcast load, which costs no vector ALU slot.
inline __m256 f16_pair_repeated(const void* p) {
    return _mm256_cvtph_ps(_mm_castps_si128(_mm_broadcast_ss(static_cast<const float*>(p))));
}

// Dequantized values of one block, value = fma(d, q, m) (Q4_1), d * (q - 8) (Q4_0), d * q (Q8_0):
// each rounded once, exactly as dequantize_row_reference computes them.
inline void dequant_block(const BlockQ4_1& b, __m256 v[4]) {
    const __m256 dm = f16_pair_repeated(&b.d);
    const __m256 d = _mm256_moveldup_ps(dm);
    const __m256 m = _mm256_movehdup_ps(dm);
    decode_nibbles(b.qs, v);
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) v[c] = _mm256_fmadd_ps(d, v[c], m);
}

inline void dequant_block(const BlockQ4_0& b, __m256 v[4]) {
    const __m256 d = _mm256_moveldup_ps(f16_pair_repeated(&b.d));  // d and 2 bytes of qs
    const __m256 eight = _mm256_set1_ps(8.0f);
    decode_nibbles(b.qs, v);
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) v[c] = _mm256_mul_ps(d, _mm256_sub_ps(v[c], eight));
}

inline void dequant_block(const BlockQ8_0& b, __m256 v[4]) {
    const __m256 d = _mm256_moveldup_ps(f16_pair_repeated(&b.d));  // d and 2 bytes of qs
    decode_int8(b.qs, v);
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) v[c] = _mm256_mul_ps(d, v[c]);
}

}  // namespace se::cpu
