// Scalar access to one element of an F32, F16 or BF16 array (the plain float dtypes), converting
// through float. Any other dtype is a bug (SE_CHECK).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace se {

float load_float(DType dtype, const void* base, int64_t index);
void store_float(DType dtype, void* base, int64_t index, float value);

}  // namespace se
