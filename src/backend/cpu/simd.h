// AVX2/FMA/F16C building blocks shared by the CPU kernels: horizontal sums, 16-bit float loads
// and stores, and a vectorised exp. Header-only so that they inline into the hot loops.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace se::cpu {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The horizontal sum of the dot-product kernels (matmul, attention scores): adjacent lanes
// first, ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). hsum4 adds in the same order, so a
// dot product has the same bits whichever of the two reduces it.
inline float hsum_pairs(__m256 v) {
    const __m256 s = _mm256_hadd_ps(v, v);  // l0+l1, l2+l3 | l4+l5, l6+l7
    const __m256 t = _mm256_hadd_ps(s, s);  // (l0+l1)+(l2+l3) | (l4+l5)+(l6+l7)
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

// The four horizontal sums of a0..a3, in order, as one vector; each in hsum_pairs' order.
inline __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 s01 = _mm256_hadd_ps(a0, a1);
    const __m256 s23 = _mm256_hadd_ps(a2, a3);
    const __m256 s = _mm256_hadd_ps(s01, s23);
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

inline float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Lanes [0, count) set, count < 8: masked loads of the last elements of a row.
inline __m256i first_lanes(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 8 consecutive f16 values as f32.
inline __m256 load_f16x8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 consecutive bf16 values as f32 (exact: bf16 is the upper half of an f32).
inline __m256 load_bf16x8(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

// Round to nearest even, as core/half.h's f32_to_f16.
inline void store_f16x8(uint16_t* p, __m256 v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// Round to nearest even, NaN stays NaN: the same bits as core/half.h's f32_to_bf16.
inline void store_bf16x8(uint16_t* p, __m256 v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    const __m256 is_nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    const __m256i out = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), is_nan));
    // Lanes hold values < 2^16, so the saturating pack is exact; fix the lane order after it.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out, out), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

// exp(x) per lane, within ~1 ulp for x in [-87, 88.37]; 0 below that range (also for -inf),
// +inf above it; NaN stays NaN. Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then a
// degree-7 polynomial for e^r (Cephes coefficients) scaled by 2^n built in the exponent bits.
inline __m256 exp256(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f);
    const __m256 hi = _mm256_set1_ps(88.37626f);
    // max/min return their second operand when one is NaN, so NaN flows through.
    const __m256 xc = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
}

// Unaligned scalar loads from block structs (which are only 2-byte aligned).
inline uint16_t load_u16(const void* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

inline float f16_scalar(uint16_t h) {
    return _cvtsh_ss(h);
}

}  // namespace se::cpu
