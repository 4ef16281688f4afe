#include "model/ggml_type.h"

#include <fmt/core.h>

#include <array>
#include <string_view>

namespace se {
namespace {

// Indexed by GGML type id. Ids 4, 5 and 31..33, 36..38 were used by GGML releases and later
// removed; files written then still carry them.
constexpr std::array<std::string_view, 42> kGgmlTypeNames = {
    "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
    "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
    "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
    "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
    "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
    "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",    "NVFP4",    "Q1_0",
};

constexpr uint32_t kF32 = 0;
constexpr uint32_t kF16 = 1;
constexpr uint32_t kQ4_0 = 2;
constexpr uint32_t kQ4_1 = 3;
constexpr uint32_t kQ8_0 = 8;
constexpr uint32_t kBF16 = 30;

}  // namespace

std::string ggml_type_name(uint32_t type_id) {
    if (type_id < kGgmlTypeNames.size()) return std::string(kGgmlTypeNames[type_id]);
    return fmt::format("type #{}", type_id);
}

std::optional<DType> dtype_from_ggml_type(uint32_t type_id) {
    switch (type_id) {
        case kF32:
            return DType::kF32;
        case kF16:
            return DType::kF16;
        case kBF16:
            return DType::kBF16;
        case kQ8_0:
            return DType::kQ8_0;
        case kQ4_0:
            return DType::kQ4_0;
        case kQ4_1:
            return DType::kQ4_1;
        default:  // the id is a number from a file, not an enum
            return std::nullopt;
    }
}

std::optional<uint32_t> ggml_type_from_dtype(DType dtype) {
    switch (dtype) {
        case DType::kF32:
            return kF32;
        case DType::kF16:
            return kF16;
        case DType::kBF16:
            return kBF16;
        case DType::kQ8_0:
            return kQ8_0;
        case DType::kQ4_0:
            return kQ4_0;
        case DType::kQ4_1:
            return kQ4_1;
        case DType::kI32:
            return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace se
