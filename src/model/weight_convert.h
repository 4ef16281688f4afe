// Dtype conversion of float weights at load time (--dtype): F32, F16 and BF16 convert to one
// another through f32 with round-to-nearest-even. Quantized blocks are never converted.
#pragma once

#include <cstdint>

#include "core/expected.h"
#include "core/host_buffer.h"
#include "core/tensor_view.h"
#include "model/weight_store.h"

namespace se {

bool dtype_is_float(DType dtype);  // F32, F16 or BF16

// dst[i] = src[i] for i < n, converting between float dtypes (SE_CHECK both are floats);
// single-threaded: callers split large tensors.
void convert_floats(DType from, const void* src, DType to, void* dst, int64_t n);

// A copy of `src` (a float dtype) in `to`, in a buffer of its own; resource_exhausted when the
// memory is not there.
Expected<HostBuffer> convert_tensor(const ConstTensorView& src, DType to);

// `view` itself when its data is aligned for its dtype (4 bytes for F32, 2 for the 16-bit and
// block formats); else an aligned copy kept alive by `store`. Files normally align tensors, but
// neither format requires it, and the kernels read typed pointers.
Expected<ConstTensorView> aligned_view(const ConstTensorView& view, WeightStore& store);

}  // namespace se
