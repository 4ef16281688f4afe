// Checked views of a tensor's data for the CUDA backend's kernels, shared by the files of
// CudaOps. Ops returns nothing: a kernel that cannot launch mid-step leaves the device in a
// state no caller can recover, so must() stops the process with the kernel's own message.
#pragma once

#include <cstdint>
#include <utility>

#include "backend/cuda/activations.h"
#include "core/check.h"
#include "core/expected.h"
#include "core/tensor_view.h"

namespace se::cuda {

inline void must(const Status& status) {
    SE_CHECK(status.ok(), "cuda backend: %s", status.to_string().c_str());
}

template <typename T>
T must(Expected<T> value) {
    if (!value.ok()) must(value.status());
    return std::move(value).value();
}

inline bf16* bf16_data(const TensorView& t, const char* what) {
    SE_CHECK(t.dtype == DType::kBF16, "cuda backend: %s is %s, not BF16", what,
             dtype_name(t.dtype).data());
    return static_cast<bf16*>(t.data);
}

inline const bf16* bf16_data(const ConstTensorView& t, const char* what) {
    SE_CHECK(t.dtype == DType::kBF16, "cuda backend: %s is %s, not BF16", what,
             dtype_name(t.dtype).data());
    return static_cast<const bf16*>(t.data);
}

inline const float* f32_data(const ConstTensorView& t, const char* what) {
    SE_CHECK(t.dtype == DType::kF32, "cuda backend: %s is %s, not F32", what,
             dtype_name(t.dtype).data());
    return static_cast<const float*>(t.data);
}

inline int32_t rows32(int64_t rows) {
    SE_CHECK(rows >= 0 && rows <= INT32_MAX);
    return static_cast<int32_t>(rows);
}

}  // namespace se::cuda
