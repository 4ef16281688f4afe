// Storage layout of GGUF's block-quantized formats (bit-exact with the files).
#pragma once

#include <cstdint>

namespace se {

inline constexpr int kQuantBlockElems = 32;

struct BlockQ8_0 {
    uint16_t d;     // f16 scale
    int8_t qs[32];  // value = d * qs[i]
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
    uint16_t d;      // f16 scale
    uint8_t qs[16];  // element i in the low nibble of qs[i], element i+16 in the high nibble
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_1 {
    uint16_t d;      // f16 scale
    uint16_t m;      // f16 minimum
    uint8_t qs[16];  // same nibble order as Q4_0; value = d * q + m
};
static_assert(sizeof(BlockQ4_1) == 20);

}  // namespace se
