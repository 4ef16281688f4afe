#include "backend/cpu/gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/dequant.h"
#include "backend/cpu/simd.h"
#include "core/check.h"

namespace se::cpu {
namespace {

static_assert(kGemmMr == 3 && kGemmNr == 4 && kPanelRows % kGemmNr == 0,
              "multiply_panel's remainder switch covers 1..2 rows; tiles store 4 columns");

// Accumulators of rows [i0, i0 + MR) x panel rows [c0, c0 + kGemmNr) over the chunk; after the
// last chunk, their sums go to y (columns before p.num_cols).
template <int MR>
void dot_tile(const PanelProduct& p, int64_t i0, int64_t c0) {
    const int64_t stride = panel_stride(p.kc);
    const float* x[MR];
    const float* w[kGemmNr];
    float* saved[MR];
    __m256 acc[MR][kGemmNr];
#pragma GCC unroll 4
    for (int c = 0; c < kGemmNr; ++c) w[c] = p.panel + (c0 + c) * stride;
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
        x[r] = p.x + (i0 + r) * p.ldx;
        saved[r] = p.acc + ((i0 + r) * kPanelRows + c0) * 8;
#pragma GCC unroll 4
        for (int c = 0; c < kGemmNr; ++c)
            acc[r][c] = p.first_chunk ? _mm256_setzero_ps() : _mm256_load_ps(saved[r] + 8 * c);
    }
    int64_t k = 0;
    for (; k + 8 <= p.kc; k += 8) {
        // Each vector is loaded once into a register (the empty asm stops the compiler from
        // folding it into every FMA that uses it, which would load it 3 or 4 times).
        __m256 xv[MR];
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
            xv[r] = _mm256_loadu_ps(x[r] + k);
            __asm__("" : "+x"(xv[r]));
        }
#pragma GCC unroll 4
        for (int c = 0; c < kGemmNr; ++c) {
            __m256 wv = _mm256_load_ps(w[c] + k);
            __asm__("" : "+x"(wv));
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
        }
    }
    if (k < p.kc) {  // x's last columns masked, the panel's already zero-padded
        const __m256i mask = first_lanes(p.kc - k);
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
            const __m256 xv = _mm256_maskload_ps(x[r] + k, mask);
#pragma GCC unroll 4
            for (int c = 0; c < kGemmNr; ++c)
                acc[r][c] = _mm256_fmadd_ps(xv, _mm256_load_ps(w[c] + k), acc[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
        if (!p.last_chunk) {
#pragma GCC unroll 4
            for (int c = 0; c < kGemmNr; ++c) _mm256_store_ps(saved[r] + 8 * c, acc[r][c]);
            continue;
        }
        const __m128 s = hsum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
        float* y = p.y + (i0 + r) * p.ldy + c0;
        if (c0 + kGemmNr <= p.num_cols) {
            _mm_storeu_ps(y, s);
        } else {
            alignas(16) float lanes[4];
            _mm_store_ps(lanes, s);
            for (int64_t c = 0; c0 + c < p.num_cols; ++c) y[c] = lanes[c];
        }
    }
}

// Rows [i0, i0 + MR) of x against every valid panel row; the x rows stay in L1 meanwhile.
template <int MR>
void row_tile(const PanelProduct& p, int64_t i0) {
    for (int64_t c0 = 0; c0 < p.num_cols; c0 += kGemmNr) dot_tile<MR>(p, i0, c0);
}

}  // namespace

void pack_panel(const PanelSource& src, float* panel) {
    const int64_t num_rows = std::min<int64_t>(kPanelRows, src.w.rows - src.j0);
    SE_CHECK(num_rows > 0 && src.k0 + src.kc <= src.w.cols);
    const int64_t offset = dtype_row_bytes(src.w.dtype, src.k0);
    const int64_t stride = panel_stride(src.kc);
    for (int64_t c = 0; c < kPanelRows; ++c) {
        float* dst = panel + c * stride;
        int64_t done = 0;
        if (c < num_rows) {
            const auto* row = static_cast<const uint8_t*>(src.w.row(src.j0 + c)) + offset;
            dequantize_row(src.w.dtype, row, dst, src.kc);
            done = src.kc;
        }
        std::fill(dst + done, dst + stride, 0.0f);
    }
}

void multiply_panel(const PanelProduct& p) {
    SE_CHECK(p.num_cols > 0 && p.num_cols <= kPanelRows);
    int64_t i = 0;
    for (; i + kGemmMr <= p.n; i += kGemmMr) row_tile<kGemmMr>(p, i);
    switch (p.n - i) {
        case 0:
            return;
        case 1:
            return row_tile<1>(p, i);
        case 2:
            return row_tile<2>(p, i);
    }
    SE_CHECK(false, "unreachable: %lld rows left", static_cast<long long>(p.n - i));
}

}  // namespace se::cpu
