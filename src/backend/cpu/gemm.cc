#include "backend/cpu/gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/dequant.h"
#include "core/check.h"

namespace se::cpu {
namespace {

static_assert(kGemmMr == 6, "multiply_panel's remainder switch covers 1..5 rows");

// dst[c * ldd + r] = src[r * lds + c] for an 8 x 8 tile.
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    __m256 t[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m256 s[8];
    for (int h = 0; h < 2; ++h) {  // rows 0..3, then rows 4..7
        const __m256* u = t + 4 * h;
        s[4 * h + 0] = _mm256_shuffle_ps(u[0], u[2], 0x44);
        s[4 * h + 1] = _mm256_shuffle_ps(u[0], u[2], 0xee);
        s[4 * h + 2] = _mm256_shuffle_ps(u[1], u[3], 0x44);
        s[4 * h + 3] = _mm256_shuffle_ps(u[1], u[3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(s[i], s[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(s[i], s[i + 4], 0x31));
    }
}

template <int MR>
void micro_kernel(const PanelProduct& p, int64_t i0, float* c, int64_t ldc, bool accumulate) {
    __m256 acc[MR][2];
    const float* x[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        x[r] = p.x + (i0 + r) * p.ldx;
    }
    const float* b = p.panel;
    for (int64_t k = 0; k < p.kc; ++k, b += kGemmNr) {
        const __m256 b0 = _mm256_load_ps(b);
        const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m256 a = _mm256_broadcast_ss(x[r] + k);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        float* cr = c + r * ldc;
        if (accumulate) {
            acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(cr));
            acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(cr + 8));
        }
        _mm256_storeu_ps(cr, acc[r][0]);
        _mm256_storeu_ps(cr + 8, acc[r][1]);
    }
}

// Rows [i0, i0 + MR): straight into y when the panel is full, else through a local tile.
template <int MR>
void row_tile(const PanelProduct& p, int64_t i0) {
    float* y = p.y + i0 * p.ldy;
    if (p.num_cols == kGemmNr) {
        micro_kernel<MR>(p, i0, y, p.ldy, p.accumulate);
        return;
    }
    alignas(32) float tile[MR * kGemmNr];
    micro_kernel<MR>(p, i0, tile, kGemmNr, false);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        for (int64_t c = 0; c < p.num_cols; ++c)
            y[r * p.ldy + c] =
                p.accumulate ? y[r * p.ldy + c] + tile[r * kGemmNr + c] : tile[r * kGemmNr + c];
    }
}

}  // namespace

void pack_panel(const PanelSource& src, float* rows_tmp, float* panel) {
    const int64_t num_rows = std::min<int64_t>(kGemmNr, src.w.rows - src.j0);
    SE_CHECK(num_rows > 0 && src.k0 + src.kc <= src.w.cols);
    const int64_t offset = dtype_row_bytes(src.w.dtype, src.k0);
    for (int64_t c = 0; c < kGemmNr; ++c) {
        float* dst = rows_tmp + c * src.kc;
        if (c < num_rows) {
            const auto* row = static_cast<const uint8_t*>(src.w.row(src.j0 + c)) + offset;
            dequantize_row(src.w.dtype, row, dst, src.kc);
        } else {
            std::fill(dst, dst + src.kc, 0.0f);
        }
    }
    int64_t k = 0;
    for (; k + 8 <= src.kc; k += 8) {
        transpose8x8(rows_tmp + k, src.kc, panel + k * kGemmNr, kGemmNr);
        transpose8x8(rows_tmp + 8 * src.kc + k, src.kc, panel + k * kGemmNr + 8, kGemmNr);
    }
    for (; k < src.kc; ++k) {
        for (int64_t c = 0; c < kGemmNr; ++c) panel[k * kGemmNr + c] = rows_tmp[c * src.kc + k];
    }
}

void multiply_panel(const PanelProduct& p) {
    SE_CHECK(p.num_cols > 0 && p.num_cols <= kGemmNr);
    int64_t i = 0;
    for (; i + kGemmMr <= p.n; i += kGemmMr) row_tile<kGemmMr>(p, i);
    switch (p.n - i) {
        case 0:
            return;
        case 1:
            return row_tile<1>(p, i);
        case 2:
            return row_tile<2>(p, i);
        case 3:
            return row_tile<3>(p, i);
        case 4:
            return row_tile<4>(p, i);
        case 5:
            return row_tile<5>(p, i);
    }
    SE_CHECK(false, "unreachable: %lld rows left", static_cast<long long>(p.n - i));
}

}  // namespace se::cpu
