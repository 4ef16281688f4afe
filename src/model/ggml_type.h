// GGML tensor type ids as GGUF files store them, their names, and the ones this engine reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace se {

// "Q4_K" for 12, ...; "type #N" for ids no GGML release has used.
std::string ggml_type_name(uint32_t type_id);

// The engine dtype of a supported GGML type: F32, F16, BF16, Q8_0, Q4_0, Q4_1; nullopt otherwise.
std::optional<DType> dtype_from_ggml_type(uint32_t type_id);

// The GGML type id of an engine dtype that GGUF can store; nullopt for I32.
std::optional<uint32_t> ggml_type_from_dtype(DType dtype);

// The list named in "not supported" messages.
inline constexpr const char* kSupportedGgmlTypes = "F32, F16, BF16, Q8_0, Q4_0, Q4_1";

}  // namespace se
