// One metadata value of a GGUF file, read lazily from the validated bytes of the mapping: a
// 49152-entry token array costs nothing until someone asks for it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/byte_cursor.h"

namespace se {

enum class GgufValueType : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
};

// "UINT32", "STRING", ...; "type #N" for ids outside the enum.
std::string_view gguf_value_type_name(GgufValueType type);

// Walks one encoded value of `type` at the cursor, checking that every length and count fits in
// the bytes left, and leaves the cursor after it. Nested arrays deeper than a small limit are
// rejected (a crafted file must not exhaust the stack). The message says what did not fit.
Status skip_gguf_value(GgufValueType type, ByteCursor& cursor);

class GgufValue {
  public:
    // `bytes` is the complete encoding of a value of `type`, already checked by skip_gguf_value.
    GgufValue(GgufValueType type, std::span<const uint8_t> bytes) : type_(type), bytes_(bytes) {}

    GgufValueType type() const { return type_; }
    bool is_array() const { return type_ == GgufValueType::kArray; }

    // Scalars; nullopt when the value has another type. Any integer type converts to int64 when
    // it fits (a UINT64 above INT64_MAX does not); floats accept F32 and F64.
    std::optional<int64_t> as_int() const;
    std::optional<double> as_float() const;
    std::optional<bool> as_bool() const;
    std::optional<std::string_view> as_string() const;  // points into the file mapping

    // Arrays (SE_CHECK is_array()).
    GgufValueType elem_type() const;
    uint64_t array_size() const;
    std::vector<GgufValue> array_items() const;

  private:
    GgufValueType type_;
    std::span<const uint8_t> bytes_;  // u8 [encoded size]
};

}  // namespace se
