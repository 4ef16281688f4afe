#include "backend/cpu/dequant.h"

#include <cmath>
#include <cstring>

#include "backend/cpu/quant_decode.h"
#include "backend/cpu/simd.h"
#include "core/check.h"
#include "core/half.h"
#include "core/quant_blocks.h"

namespace se {
namespace {

using cpu::dequant_block;

template <typename Block>
void dequantize_blocks(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const Block*>(src);
    for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
        __m256 v[4];
        dequant_block(blocks[b], v);
#pragma GCC unroll 8
        for (int c = 0; c < 4; ++c) _mm256_storeu_ps(dst + b * kQuantBlockElems + 8 * c, v[c]);
    }
}

void dequantize_f16(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, cpu::load_f16x8(src + i));
    for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void dequantize_bf16(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, cpu::load_bf16x8(src + i));
    for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace

void dequantize_row(DType dtype, const void* src, float* dst, int64_t n) {
    SE_CHECK(n % dtype_block_elems(dtype) == 0, "%lld elements of %s", static_cast<long long>(n),
             dtype_name(dtype).data());
    switch (dtype) {
        case DType::kF32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case DType::kF16:
            dequantize_f16(static_cast<const uint16_t*>(src), dst, n);
            return;
        case DType::kBF16:
            dequantize_bf16(static_cast<const uint16_t*>(src), dst, n);
            return;
        case DType::kQ8_0:
            dequantize_blocks<BlockQ8_0>(src, dst, n);
            return;
        case DType::kQ4_0:
            dequantize_blocks<BlockQ4_0>(src, dst, n);
            return;
        case DType::kQ4_1:
            dequantize_blocks<BlockQ4_1>(src, dst, n);
            return;
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "dequantize_row: %s is not a weight dtype", dtype_name(dtype).data());
}

void dequantize_row_reference(DType dtype, const void* src, float* dst, int64_t n) {
    SE_CHECK(n % dtype_block_elems(dtype) == 0);
    const int64_t num_blocks = n / kQuantBlockElems;
    switch (dtype) {
        case DType::kF32:
            for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<const float*>(src)[i];
            return;
        case DType::kF16:
            for (int64_t i = 0; i < n; ++i)
                dst[i] = f16_to_f32(static_cast<const uint16_t*>(src)[i]);
            return;
        case DType::kBF16:
            for (int64_t i = 0; i < n; ++i)
                dst[i] = bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
            return;
        case DType::kQ8_0:
            for (int64_t b = 0; b < num_blocks; ++b) {
                const auto& blk = static_cast<const BlockQ8_0*>(src)[b];
                const float d = f16_to_f32(blk.d);
                for (int i = 0; i < kQuantBlockElems; ++i)
                    dst[b * kQuantBlockElems + i] = d * static_cast<float>(blk.qs[i]);
            }
            return;
        case DType::kQ4_0:
            for (int64_t b = 0; b < num_blocks; ++b) {
                const auto& blk = static_cast<const BlockQ4_0*>(src)[b];
                const float d = f16_to_f32(blk.d);
                for (int i = 0; i < kQuantBlockElems; ++i) {
                    const int q = i < 16 ? blk.qs[i] & 0x0f : blk.qs[i - 16] >> 4;
                    dst[b * kQuantBlockElems + i] = d * static_cast<float>(q - 8);
                }
            }
            return;
        case DType::kQ4_1:
            for (int64_t b = 0; b < num_blocks; ++b) {
                const auto& blk = static_cast<const BlockQ4_1*>(src)[b];
                const float d = f16_to_f32(blk.d);
                const float m = f16_to_f32(blk.m);
                for (int i = 0; i < kQuantBlockElems; ++i) {
                    const int q = i < 16 ? blk.qs[i] & 0x0f : blk.qs[i - 16] >> 4;
                    dst[b * kQuantBlockElems + i] = std::fma(d, static_cast<float>(q), m);
                }
            }
            return;
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "dequantize_row_reference: %s is not a weight dtype", dtype_name(dtype).data());
}

}  // namespace se
