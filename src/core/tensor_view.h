// Non-owning 2-D row-major views of activations and weights. Shapes in comments use the
// notation `dtype [rows, cols]`; a weight of a linear layer is [out_features, in_features].
#pragma once

#include <cstdint>

#include "core/check.h"
#include "core/dtype.h"

namespace se {

struct TensorView {
    DType dtype = DType::kF32;
    void* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;

    int64_t num_elems() const { return rows * cols; }
    int64_t row_bytes() const { return dtype_row_bytes(dtype, cols); }
    float* f32() const {
        SE_CHECK(dtype == DType::kF32, "tensor is %s, not F32", dtype_name(dtype).data());
        return static_cast<float*>(data);
    }
    float* f32_row(int64_t row) const { return f32() + row * cols; }
    // Rows [first, first + count) as a view of their own.
    TensorView slice_rows(int64_t first, int64_t count) const {
        SE_CHECK(first >= 0 && count >= 0 && first + count <= rows);
        return {dtype, static_cast<uint8_t*>(data) + first * row_bytes(), count, cols};
    }
};

// A read-only view: weights, which usually live in a read-only file mapping.
struct ConstTensorView {
    DType dtype = DType::kF32;
    const void* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;

    ConstTensorView() = default;
    ConstTensorView(DType dtype_, const void* data_, int64_t rows_, int64_t cols_)
        : dtype(dtype_), data(data_), rows(rows_), cols(cols_) {}
    ConstTensorView(const TensorView& v)  // NOLINT(google-explicit-constructor)
        : dtype(v.dtype), data(v.data), rows(v.rows), cols(v.cols) {}

    bool empty() const { return data == nullptr; }
    int64_t num_elems() const { return rows * cols; }
    int64_t row_bytes() const { return dtype_row_bytes(dtype, cols); }
    const void* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
    const float* f32() const {
        SE_CHECK(dtype == DType::kF32, "tensor is %s, not F32", dtype_name(dtype).data());
        return static_cast<const float*>(data);
    }
};

}  // namespace se
