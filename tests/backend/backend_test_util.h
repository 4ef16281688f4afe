// Random inputs and comparison helpers for the differential tests of the backend ops.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "core/quant_blocks.h"
#include "core/tensor_view.h"

namespace se::testing {

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
}

inline std::vector<float> nan_filled(int64_t n) {
    return std::vector<float>(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
}

inline TensorView f32_view(std::vector<float>& v, int64_t rows, int64_t cols) {
    return {DType::kF32, v.data(), rows, cols};
}

inline ConstTensorView f32_cview(const std::vector<float>& v, int64_t rows, int64_t cols) {
    return {DType::kF32, v.data(), rows, cols};
}

// A weight matrix in any weight dtype, quantized from random values the way GGUF quantizers
// pick scales (Q8_0: amax / 127; Q4_0: signed max / -8; Q4_1: (max - min) / 15 and min).
struct Weights {
    DType dtype = DType::kF32;
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<uint8_t> bytes;

    ConstTensorView view() const { return {dtype, bytes.data(), rows, cols}; }
};

inline void quantize_block(const float* x, BlockQ8_0* b) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    b->d = f32_to_f16(d);
    for (int i = 0; i < 32; ++i)
        b->qs[i] = static_cast<int8_t>(d == 0.0f ? 0 : std::lround(x[i] / d));
}

inline void quantize_block(const float* x, BlockQ4_0* b) {
    float max = 0.0f;
    for (int i = 0; i < 32; ++i) max = std::fabs(x[i]) > std::fabs(max) ? x[i] : max;
    const float d = max / -8.0f;
    b->d = f32_to_f16(d);
    auto q = [&](int i) {
        const long v = d == 0.0f ? 8 : std::lround(x[i] / d) + 8;
        return static_cast<uint8_t>(std::clamp<long>(v, 0, 15));
    };
    for (int i = 0; i < 16; ++i) b->qs[i] = static_cast<uint8_t>(q(i) | q(i + 16) << 4);
}

inline void quantize_block(const float* x, BlockQ4_1* b) {
    float lo = x[0];
    float hi = x[0];
    for (int i = 0; i < 32; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    const float d = (hi - lo) / 15.0f;
    b->d = f32_to_f16(d);
    b->m = f32_to_f16(lo);
    auto q = [&](int i) {
        const long v = d == 0.0f ? 0 : std::lround((x[i] - lo) / d);
        return static_cast<uint8_t>(std::clamp<long>(v, 0, 15));
    };
    for (int i = 0; i < 16; ++i) b->qs[i] = static_cast<uint8_t>(q(i) | q(i + 16) << 4);
}

template <typename Block>
void quantize_rows(const std::vector<float>& values, Weights* w) {
    auto* blocks = reinterpret_cast<Block*>(w->bytes.data());
    for (int64_t b = 0; b < w->rows * w->cols / 32; ++b)
        quantize_block(values.data() + b * 32, &blocks[b]);
}

inline Weights random_weights(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
    Weights w{dtype, rows, cols, std::vector<uint8_t>(dtype_row_bytes(dtype, cols) * rows)};
    const std::vector<float> values = random_floats(rows * cols, seed, -0.5f, 0.5f);
    auto* h = reinterpret_cast<uint16_t*>(w.bytes.data());
    switch (dtype) {
        case DType::kF32:
            std::memcpy(w.bytes.data(), values.data(), w.bytes.size());
            break;
        case DType::kF16:
            for (size_t i = 0; i < values.size(); ++i) h[i] = f32_to_f16(values[i]);
            break;
        case DType::kBF16:
            for (size_t i = 0; i < values.size(); ++i) h[i] = f32_to_bf16(values[i]);
            break;
        case DType::kQ8_0:
            quantize_rows<BlockQ8_0>(values, &w);
            break;
        case DType::kQ4_0:
            quantize_rows<BlockQ4_0>(values, &w);
            break;
        case DType::kQ4_1:
            quantize_rows<BlockQ4_1>(values, &w);
            break;
        case DType::kI32:
            ADD_FAILURE() << "I32 is not a weight dtype";
            break;
    }
    return w;
}

// Every element of got within tol[i] of want (and never NaN).
inline void expect_all_near(const std::vector<float>& got, const std::vector<float>& want,
                            const std::vector<float>& tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    int failures = 0;
    for (size_t i = 0; i < got.size() && failures < 10; ++i) {
        if (!(std::fabs(got[i] - want[i]) <= tol[i])) {  // also catches NaN
            ADD_FAILURE() << what << " at " << i << ": got " << got[i] << ", want " << want[i]
                          << " (tolerance " << tol[i] << ")";
            ++failures;
        }
    }
}

inline void expect_all_near(const std::vector<float>& got, const std::vector<float>& want,
                            float abs_tol, float rel_tol, const std::string& what) {
    std::vector<float> tol(want.size());
    for (size_t i = 0; i < want.size(); ++i) tol[i] = abs_tol + rel_tol * std::fabs(want[i]);
    expect_all_near(got, want, tol, what);
}

}  // namespace se::testing
