#include "backend/cpu/gemv_q4.h"

#include <immintrin.h>

#include "backend/cpu/simd.h"
#include "core/check.h"
#include "core/quant_blocks.h"

namespace se::cpu {
namespace {

// Bit offset s of the nibble vector c keeps in lane half h. Vectors 2 and 3 read the words
// shifted right by 12 so that every q * 2^s stays below 2^24 (exact in f32, positive in i32).
constexpr int kShift[4][2] = {{0, 4}, {8, 12}, {4, 8}, {12, 16}};

// Software prefetch distance along the weight rows (which a thread reads contiguously).
constexpr int64_t kPrefetchBytes = 2048;

struct NibbleMasks {
    __m256i m[4];
};

NibbleMasks nibble_masks() {
    NibbleMasks masks;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        const int lo = 0xf << kShift[c][0];
        const int hi = 0xf << kShift[c][1];
        masks.m[c] = _mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi);
    }
    return masks;
}

// The block's nibbles as f32 q * 2^s, in the lane order of the prepared activations.
inline void decode_in_place(const uint8_t* qs, const NibbleMasks& masks, __m256 q[4]) {
    const __m256i v =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    const __m256i v12 = _mm256_srli_epi32(v, 12);
    q[0] = _mm256_cvtepi32_ps(_mm256_and_si256(v, masks.m[0]));
    q[1] = _mm256_cvtepi32_ps(_mm256_and_si256(v, masks.m[1]));
    q[2] = _mm256_cvtepi32_ps(_mm256_and_si256(v12, masks.m[2]));
    q[3] = _mm256_cvtepi32_ps(_mm256_and_si256(v12, masks.m[3]));
}

// (d, m, 0, 0) of a Q4_1 block; (d, 0, 0, 0) of a Q4_0 block.
inline __m128 scale_pair(const BlockQ4_1& b) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u32(&b.d))));
}
inline __m128 scale_pair(const BlockQ4_0& b) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128(load_u16(&b.d)));
}

inline float hsum128(__m128 v) {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

template <typename Block, int R>
void gemv_q4(const GemvQ4Pass& p, int64_t j_begin, int64_t j_end) {
    const NibbleMasks masks = nibble_masks();
    for (int64_t j = j_begin; j < j_end; ++j) {
        const Block* row = static_cast<const Block*>(p.w) + j * p.num_blocks;
        __m256 acc[R][2];
        __m128 acc_const[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            acc[r][0] = acc[r][1] = _mm256_setzero_ps();
            acc_const[r] = _mm_setzero_ps();
        }
        auto step = [&](int64_t b, int u) __attribute__((always_inline)) {
            __m256 q[4];
            decode_in_place(row[b].qs, masks, q);
            const __m128 dm = scale_pair(row[b]);
            const __m256 d = _mm256_broadcastss_ps(dm);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const float* xb = p.prepared[r] + b * kQ4PreparedBlock;
                __m256 t = _mm256_mul_ps(_mm256_loadu_ps(xb), q[0]);
                t = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 8), q[1], t);
                t = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 16), q[2], t);
                t = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 24), q[3], t);
                acc[r][u] = _mm256_fmadd_ps(d, t, acc[r][u]);
                acc_const[r] = _mm_fmadd_ps(dm, _mm_loadu_ps(xb + 32), acc_const[r]);
            }
        };
        int64_t b = 0;
        for (; b + 2 <= p.num_blocks; b += 2) {  // two accumulators halve the dependency chain
            _mm_prefetch(reinterpret_cast<const char*>(row + b) + kPrefetchBytes, _MM_HINT_T0);
            step(b, 0);
            step(b + 1, 1);
        }
        if (b < p.num_blocks) step(b, 0);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            p.y[r][j] = hsum(_mm256_add_ps(acc[r][0], acc[r][1])) + hsum128(acc_const[r]);
    }
}

}  // namespace

void prepare_q4_activations(DType dtype, const float* x, int64_t n, int64_t k, float* prepared) {
    SE_CHECK((dtype == DType::kQ4_0 || dtype == DType::kQ4_1) && k % kQuantBlockElems == 0);
    __m256 scale[4];
    for (int c = 0; c < 4; ++c) {
        // Multiplying by a power of two is exact (for normal values).
        const float lo = 1.0f / static_cast<float>(1 << kShift[c][0]);
        const float hi = 1.0f / static_cast<float>(1 << kShift[c][1]);
        scale[c] = _mm256_setr_ps(lo, lo, lo, lo, hi, hi, hi, hi);
    }
    const bool q4_1 = dtype == DType::kQ4_1;
    for (int64_t blk = 0; blk < n * k / kQuantBlockElems; ++blk) {
        const float* xb = x + blk * kQuantBlockElems;  // rows are contiguous: block blk of x
        float* out = prepared + blk * kQ4PreparedBlock;
        // a[w] = (x[4w .. 4w + 3] | x[16 + 4w .. 16 + 4w + 3]); a 4x4 transpose in each half
        // gives vector c, lane (w, h) = x[4w + c + 16h].
        __m256 a[4];
        for (int w = 0; w < 4; ++w) a[w] = _mm256_loadu2_m128(xb + 16 + 4 * w, xb + 4 * w);
        const __m256 t0 = _mm256_unpacklo_ps(a[0], a[1]);
        const __m256 t1 = _mm256_unpacklo_ps(a[2], a[3]);
        const __m256 t2 = _mm256_unpackhi_ps(a[0], a[1]);
        const __m256 t3 = _mm256_unpackhi_ps(a[2], a[3]);
        const __m256 v[4] = {_mm256_shuffle_ps(t0, t1, 0x44), _mm256_shuffle_ps(t0, t1, 0xee),
                             _mm256_shuffle_ps(t2, t3, 0x44), _mm256_shuffle_ps(t2, t3, 0xee)};
        for (int c = 0; c < 4; ++c) _mm256_storeu_ps(out + 8 * c, _mm256_mul_ps(v[c], scale[c]));
        const float sum = hsum(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
        out[32] = q4_1 ? 0.0f : -8.0f * sum;
        out[33] = q4_1 ? sum : 0.0f;
        out[34] = 0.0f;
        out[35] = 0.0f;
    }
}

template <int R>
void gemv_q4_0(const GemvQ4Pass& pass, int64_t j_begin, int64_t j_end) {
    gemv_q4<BlockQ4_0, R>(pass, j_begin, j_end);
}

template <int R>
void gemv_q4_1(const GemvQ4Pass& pass, int64_t j_begin, int64_t j_end) {
    gemv_q4<BlockQ4_1, R>(pass, j_begin, j_end);
}

template void gemv_q4_0<1>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_0<2>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_0<3>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_0<4>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_1<1>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_1<2>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_1<3>(const GemvQ4Pass&, int64_t, int64_t);
template void gemv_q4_1<4>(const GemvQ4Pass&, int64_t, int64_t);

}  // namespace se::cpu
