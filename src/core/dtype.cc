#include "core/dtype.h"

#include "core/quant_blocks.h"

namespace se {

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::kF32:
            return "F32";
        case DType::kF16:
            return "F16";
        case DType::kBF16:
            return "BF16";
        case DType::kQ8_0:
            return "Q8_0";
        case DType::kQ4_0:
            return "Q4_0";
        case DType::kQ4_1:
            return "Q4_1";
        case DType::kI32:
            return "I32";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    if (name == "float32" || name == "float" || name == "f32" || name == "F32") return DType::kF32;
    if (name == "float16" || name == "half" || name == "f16" || name == "F16") return DType::kF16;
    if (name == "bfloat16" || name == "bf16" || name == "BF16") return DType::kBF16;
    return std::nullopt;
}

int64_t dtype_block_elems(DType dtype) {
    switch (dtype) {
        case DType::kF32:
        case DType::kF16:
        case DType::kBF16:
        case DType::kI32:
            return 1;
        case DType::kQ8_0:
        case DType::kQ4_0:
        case DType::kQ4_1:
            return kQuantBlockElems;
    }
    return 1;
}

int64_t dtype_block_bytes(DType dtype) {
    switch (dtype) {
        case DType::kF32:
            return 4;
        case DType::kF16:
            return 2;
        case DType::kBF16:
            return 2;
        case DType::kI32:
            return 4;
        case DType::kQ8_0:
            return sizeof(BlockQ8_0);
        case DType::kQ4_0:
            return sizeof(BlockQ4_0);
        case DType::kQ4_1:
            return sizeof(BlockQ4_1);
    }
    return 0;
}

bool dtype_is_quantized(DType dtype) {
    return dtype_block_elems(dtype) > 1;
}

}  // namespace se
