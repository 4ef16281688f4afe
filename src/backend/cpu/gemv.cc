#include "backend/cpu/gemv.h"

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/gemv_q4.h"
#include "backend/cpu/quant_decode.h"
#include "backend/cpu/simd.h"
#include "core/half.h"

namespace se::cpu {
namespace {

// Weight rows handled together: every pass over the rows of x re-reads them from L1.
constexpr int64_t kRowChunk = 8;
// Software prefetch distance along the weight rows (which a thread reads contiguously).
constexpr int64_t kPrefetchBytes = 2048;

inline void prefetch(const void* p) {
    _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
}

// Q8_0: the dot product with x is d * sum(x * q).
inline void decode_for_dot(const BlockQ8_0& b, __m256 q[4], __m256* d) {
    *d = _mm256_set1_ps(f16_scalar(load_u16(&b.d)));
    decode_int8(b.qs, q);
}

// y[i0 + r, j] for r < R, j in [j_begin, j_end), Q8_0 weights.
template <int R>
void gemv_q8_0(const GemvArgs& a, int64_t i0, int64_t j_begin, int64_t j_end) {
    using Block = BlockQ8_0;
    const int64_t nb = a.k / kQuantBlockElems;
    const float* x[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) x[r] = a.x + (i0 + r) * a.k;
    const auto* w_base = static_cast<const uint8_t*>(a.w.data);
    const int64_t row_bytes = nb * static_cast<int64_t>(sizeof(Block));
    for (int64_t j = j_begin; j < j_end; ++j) {
        const auto* w = reinterpret_cast<const Block*>(w_base + j * row_bytes);
        __m256 acc[R][2];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        // Two blocks per step, with separate accumulators, to halve the dependency chains.
        auto step = [&](int64_t b, int u) __attribute__((always_inline)) {
            __m256 q[4];
            __m256 d;
            decode_for_dot(w[b], q, &d);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const float* xb = x[r] + b * kQuantBlockElems;
                __m256 t = _mm256_mul_ps(_mm256_loadu_ps(xb), q[0]);
                t = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 8), q[1], t);
                t = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 16), q[2], t);
                t = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 24), q[3], t);
                acc[r][u] = _mm256_fmadd_ps(d, t, acc[r][u]);
            }
        };
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            prefetch(w + b);
            step(b, 0);
            step(b + 1, 1);
        }
        if (b < nb) step(b, 0);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            a.y[(i0 + r) * a.w.rows + j] = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
        }
    }
}

struct F32Loader {
    using T = float;
    static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float load1(const float* p) { return *p; }
};
struct F16Loader {
    using T = uint16_t;
    static __m256 load8(const uint16_t* p) { return load_f16x8(p); }
    static float load1(const uint16_t* p) { return f16_to_f32(*p); }
};
struct BF16Loader {
    using T = uint16_t;
    static __m256 load8(const uint16_t* p) { return load_bf16x8(p); }
    static float load1(const uint16_t* p) { return bf16_to_f32(*p); }
};

// Same for f32 / f16 / bf16 weights; k may be any size.
template <typename Loader, int R>
void gemv_float(const GemvArgs& a, int64_t i0, int64_t j_begin, int64_t j_end) {
    const float* x[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) x[r] = a.x + (i0 + r) * a.k;
    const auto* w_base = static_cast<const typename Loader::T*>(a.w.data);
    for (int64_t j = j_begin; j < j_end; ++j) {
        const auto* w = w_base + j * a.k;
        __m256 acc[R][2];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        int64_t c = 0;
        for (; c + 16 <= a.k; c += 16) {
            prefetch(w + c);
            const __m256 w0 = Loader::load8(w + c);
            const __m256 w1 = Loader::load8(w + c + 8);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + c), w0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + c + 8), w1, acc[r][1]);
            }
        }
        if (c + 8 <= a.k) {
            const __m256 w0 = Loader::load8(w + c);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + c), w0, acc[r][0]);
            c += 8;
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            float sum = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
            for (int64_t t = c; t < a.k; ++t) sum += x[r][t] * Loader::load1(w + t);
            a.y[(i0 + r) * a.w.rows + j] = sum;
        }
    }
}

template <int R>
GemvQ4Pass q4_pass(const GemvArgs& a, int64_t i0) {
    GemvQ4Pass pass{.num_blocks = a.k / kQuantBlockElems, .w = a.w.data};
    for (int r = 0; r < R; ++r) {
        pass.prepared[r] = a.x_q4 + (i0 + r) * pass.num_blocks * kQ4PreparedBlock;
        pass.y[r] = a.y + (i0 + r) * a.w.rows;
    }
    return pass;
}

template <int R>
void gemv_pass(const GemvArgs& a, int64_t i0, int64_t j_begin, int64_t j_end) {
    switch (a.w.dtype) {
        case DType::kF32:
            return gemv_float<F32Loader, R>(a, i0, j_begin, j_end);
        case DType::kF16:
            return gemv_float<F16Loader, R>(a, i0, j_begin, j_end);
        case DType::kBF16:
            return gemv_float<BF16Loader, R>(a, i0, j_begin, j_end);
        case DType::kQ8_0:
            return gemv_q8_0<R>(a, i0, j_begin, j_end);
        case DType::kQ4_0:
            return gemv_q4_0<R>(q4_pass<R>(a, i0), j_begin, j_end);
        case DType::kQ4_1:
            return gemv_q4_1<R>(q4_pass<R>(a, i0), j_begin, j_end);
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "matmul: %s weights", dtype_name(a.w.dtype).data());
}

}  // namespace

void gemv_rows(const GemvArgs& args, int64_t j_begin, int64_t j_end) {
    // The range's first lines: the kernels' software prefetch only looks ahead of what they
    // already read, and the hardware prefetcher needs a few misses to start.
    const int64_t row_bytes = args.w.row_bytes();
    const auto* start = static_cast<const char*>(args.w.data) + j_begin * row_bytes;
    const int64_t bytes = std::min<int64_t>((j_end - j_begin) * row_bytes, kPrefetchBytes);
    for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(start + b, _MM_HINT_T0);
    for (int64_t j0 = j_begin; j0 < j_end; j0 += kRowChunk) {
        const int64_t j1 = std::min(j_end, j0 + kRowChunk);
        for (int64_t i0 = 0; i0 < args.n; i0 += kGemvMaxRows) {
            switch (std::min<int64_t>(kGemvMaxRows, args.n - i0)) {
                case 1:
                    gemv_pass<1>(args, i0, j0, j1);
                    break;
                case 2:
                    gemv_pass<2>(args, i0, j0, j1);
                    break;
                case 3:
                    gemv_pass<3>(args, i0, j0, j1);
                    break;
                default:
                    gemv_pass<4>(args, i0, j0, j1);
                    break;
            }
        }
    }
}

}  // namespace se::cpu
