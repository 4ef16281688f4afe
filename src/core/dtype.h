// Element types of weights, activations and KV entries, including GGUF's block-quantized formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace se {

enum class DType : uint8_t {
    kF32,
    kF16,
    kBF16,
    kQ8_0,  // blocks of 32: f16 scale + 32 x int8
    kQ4_0,  // blocks of 32: f16 scale + 16 bytes of nibbles, value = d * (q - 8)
    kQ4_1,  // blocks of 32: f16 scale + f16 min + 16 bytes of nibbles, value = d * q + m
    kI32,
};

std::string_view dtype_name(DType dtype);

// Parses the names users and config files use: "float32"/"f32", "bfloat16"/"bf16", ...
std::optional<DType> parse_dtype(std::string_view name);

// Elements per storage block: 1 for plain types, 32 for the GGUF block formats.
int64_t dtype_block_elems(DType dtype);

// Bytes per storage block.
int64_t dtype_block_bytes(DType dtype);

bool dtype_is_quantized(DType dtype);

// Bytes needed for `num_elems` elements; num_elems must be a multiple of the block size.
inline int64_t dtype_row_bytes(DType dtype, int64_t num_elems) {
    return num_elems / dtype_block_elems(dtype) * dtype_block_bytes(dtype);
}

}  // namespace se
