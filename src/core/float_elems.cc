#include "core/float_elems.h"

#include "core/check.h"
#include "core/half.h"

namespace se {

float load_float(DType dtype, const void* base, int64_t index) {
    switch (dtype) {
        case DType::kF32:
            return static_cast<const float*>(base)[index];
        case DType::kF16:
            return f16_to_f32(static_cast<const uint16_t*>(base)[index]);
        case DType::kBF16:
            return bf16_to_f32(static_cast<const uint16_t*>(base)[index]);
        case DType::kQ8_0:
        case DType::kQ4_0:
        case DType::kQ4_1:
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "load_float of a %s array", dtype_name(dtype).data());
}

void store_float(DType dtype, void* base, int64_t index, float value) {
    switch (dtype) {
        case DType::kF32:
            static_cast<float*>(base)[index] = value;
            return;
        case DType::kF16:
            static_cast<uint16_t*>(base)[index] = f32_to_f16(value);
            return;
        case DType::kBF16:
            static_cast<uint16_t*>(base)[index] = f32_to_bf16(value);
            return;
        case DType::kQ8_0:
        case DType::kQ4_0:
        case DType::kQ4_1:
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "store_float into a %s array", dtype_name(dtype).data());
}

}  // namespace se
