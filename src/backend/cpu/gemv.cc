#include "backend/cpu/gemv.h"

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/quant_decode.h"
#include "backend/cpu/simd.h"
#include "core/check.h"
#include "core/half.h"

namespace se::cpu {
namespace {

// Weight rows handled together: every pass over the rows of x re-reads them from L1.
constexpr int64_t kRowChunk = 8;
// Rows of x per pass: 3 rows x 4 weight rows = 12 accumulators, the most that fit in registers
// beside a decoded block.
constexpr int kMaxPassRows = 3;
// Software prefetch distance along the weight rows (which a thread reads contiguously).
constexpr int64_t kPrefetchBytes = 2048;

// A weight row as steps of kElems elements, decoded into kVecs f32 vectors of 8: the exact
// dequantized values (dequant.h), lane l of vector c holding element 8c + l of the step.
template <typename Block>
struct QuantRows {
    static constexpr int kElems = kQuantBlockElems;
    static constexpr int kVecs = 4;
    static constexpr int64_t kStepBytes = sizeof(Block);
    static void decode(const uint8_t* row, int64_t step, __m256* v) {
        dequant_block(reinterpret_cast<const Block*>(row)[step], v);
    }
    // Rows are whole blocks: no tail.
    static __m256 tail(const uint8_t*, int64_t, int64_t) { return _mm256_setzero_ps(); }
};

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

// Float rows: steps of 8; the last count < 8 elements come zero-padded from tail().
template <typename Loader>
struct FloatRows {
    using T = typename Loader::T;
    static constexpr int kElems = 8;
    static constexpr int kVecs = 1;
    static constexpr int64_t kStepBytes = 8 * sizeof(T);
    static void decode(const uint8_t* row, int64_t step, __m256* v) {
        v[0] = Loader::load8(reinterpret_cast<const T*>(row) + 8 * step);
    }
    static __m256 tail(const uint8_t* row, int64_t begin, int64_t count) {
        alignas(32) float padded[8] = {};
        const T* src = reinterpret_cast<const T*>(row) + begin;
        for (int64_t t = 0; t < count; ++t) padded[t] = Loader::load1(src + t);
        return _mm256_load_ps(padded);
    }
};

// The R x JR outputs of a pass, reduced in matmul.h's order; columns at or past j_end dropped.
template <int R, int JR>
void store_pass(__m256 (&acc)[R][JR], float* const (&y)[R], int64_t j0, int64_t j_end) {
    static_assert(JR % 4 == 0);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int c = 0; c < JR; c += 4) {
            const __m128 s = hsum4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
            if (j0 + c + 4 <= j_end) {
                _mm_storeu_ps(y[r] + j0 + c, s);
            } else {
                alignas(16) float lanes[4];
                _mm_store_ps(lanes, s);
                for (int64_t t = 0; j0 + c + t < j_end; ++t) y[r][j0 + c + t] = lanes[t];
            }
        }
    }
}

// y[i0 + r, j0 + jr] for r < R, jr < JR (columns before j_end): R x JR FMA chains in step.
template <typename Rows, int R, int JR>
void gemv_pass(const GemvArgs& a, int64_t i0, int64_t j0, int64_t j_end) {
    const int64_t row_bytes = a.w.row_bytes();
    const uint8_t* w[JR];
#pragma GCC unroll 8
    for (int jr = 0; jr < JR; ++jr) {  // rows past j_end repeat the last one; not stored
        w[jr] = static_cast<const uint8_t*>(a.w.data) + std::min(j0 + jr, j_end - 1) * row_bytes;
    }
    const float* x[R];
    float* y[R];
    __m256 acc[R][JR];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        x[r] = a.x + (i0 + r) * a.k;
        y[r] = a.y + (i0 + r) * a.w.rows;
#pragma GCC unroll 8
        for (int jr = 0; jr < JR; ++jr) acc[r][jr] = _mm256_setzero_ps();
    }
    // The pass reads its JR rows side by side, JR * kStepBytes bytes per step: meanwhile,
    // prefetch the next JR rows (next in memory) at the same pace, line by line. Passes over
    // further rows of x find the rows in L1.
    constexpr int64_t kStepLines = (JR * Rows::kStepBytes + 63) / 64;
    const char* ahead = i0 == 0 ? reinterpret_cast<const char*>(w[0]) + JR * row_bytes : nullptr;
    const int64_t steps = a.k / Rows::kElems;
    for (int64_t s = 0; s < steps; ++s) {
        if (ahead != nullptr) {
            const char* line = ahead + s * JR * Rows::kStepBytes;
#pragma GCC unroll 8
            for (int64_t l = 0; l < kStepLines; ++l) _mm_prefetch(line + 64 * l, _MM_HINT_T0);
        }
#pragma GCC unroll 8
        for (int jr = 0; jr < JR; ++jr) {
            __m256 v[Rows::kVecs];
            Rows::decode(w[jr], s, v);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const float* xs = x[r] + s * Rows::kElems;
#pragma GCC unroll 4
                for (int c = 0; c < Rows::kVecs; ++c)
                    acc[r][jr] = _mm256_fmadd_ps(_mm256_loadu_ps(xs + 8 * c), v[c], acc[r][jr]);
            }
        }
    }
    const int64_t done = steps * Rows::kElems;
    if (done < a.k) {  // zero-padded last step of float rows
        const __m256i mask = first_lanes(a.k - done);
#pragma GCC unroll 8
        for (int jr = 0; jr < JR; ++jr) {
            const __m256 v = Rows::tail(w[jr], done, a.k - done);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r)
                acc[r][jr] = _mm256_fmadd_ps(_mm256_maskload_ps(x[r] + done, mask), v, acc[r][jr]);
        }
    }
    store_pass<R, JR>(acc, y, j0, j_end);
}

// Rows [i0, i0 + R) of x against weight rows [j0, j1): one row of x runs 8 weight rows side by
// side (8 chains), more rows of x run 4.
template <typename Rows, int R>
void gemv_chunk(const GemvArgs& a, int64_t i0, int64_t j0, int64_t j1) {
    constexpr int kJr = 4;
    for (int64_t j = j0; j < j1; j += kJr) gemv_pass<Rows, R, kJr>(a, i0, j, j1);
}

template <typename Rows>
void gemv_rows_of(const GemvArgs& a, int64_t j_begin, int64_t j_end) {
    for (int64_t j0 = j_begin; j0 < j_end; j0 += kRowChunk) {
        const int64_t j1 = std::min(j_end, j0 + kRowChunk);
        for (int64_t i0 = 0; i0 < a.n; i0 += kMaxPassRows) {
            switch (std::min<int64_t>(kMaxPassRows, a.n - i0)) {
                case 1:
                    gemv_chunk<Rows, 1>(a, i0, j0, j1);
                    break;
                case 2:
                    gemv_chunk<Rows, 2>(a, i0, j0, j1);
                    break;
                default:
                    gemv_chunk<Rows, 3>(a, i0, j0, j1);
                    break;
            }
        }
    }
}

}  // namespace

void gemv_rows(const GemvArgs& args, int64_t j_begin, int64_t j_end) {
    // The range's first rows: the kernels' software prefetch only looks ahead of what they
    // already read, and the hardware prefetcher needs a few misses to start.
    const int64_t row_bytes = args.w.row_bytes();
    const auto* start = static_cast<const char*>(args.w.data) + j_begin * row_bytes;
    const int64_t bytes =
        std::min((j_end - j_begin) * row_bytes, std::max(kRowChunk * row_bytes, kPrefetchBytes));
    for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(start + b, _MM_HINT_T0);
    switch (args.w.dtype) {
        case DType::kF32:
            return gemv_rows_of<FloatRows<F32Loader>>(args, j_begin, j_end);
        case DType::kF16:
            return gemv_rows_of<FloatRows<F16Loader>>(args, j_begin, j_end);
        case DType::kBF16:
            return gemv_rows_of<FloatRows<BF16Loader>>(args, j_begin, j_end);
        case DType::kQ8_0:
            return gemv_rows_of<QuantRows<BlockQ8_0>>(args, j_begin, j_end);
        case DType::kQ4_0:
            return gemv_rows_of<QuantRows<BlockQ4_0>>(args, j_begin, j_end);
        case DType::kQ4_1:
            return gemv_rows_of<QuantRows<BlockQ4_1>>(args, j_begin, j_end);
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "matmul: %s weights", dtype_name(args.w.dtype).data());
}

}  // namespace se::cpu
