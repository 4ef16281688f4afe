#include "model/gguf_value.h"

#include <fmt/core.h>

#include <limits>

#include "core/check.h"

namespace se {
namespace {

// Deeper nesting than this appears in no real file; refusing it bounds the recursion.
constexpr int kMaxArrayDepth = 8;

// Size of a fixed-size scalar type, 0 for strings and arrays, nullopt for unknown ids.
std::optional<uint64_t> scalar_size(GgufValueType type) {
    switch (type) {
        case GgufValueType::kU8:
        case GgufValueType::kI8:
        case GgufValueType::kBool:
            return 1;
        case GgufValueType::kU16:
        case GgufValueType::kI16:
            return 2;
        case GgufValueType::kU32:
        case GgufValueType::kI32:
        case GgufValueType::kF32:
            return 4;
        case GgufValueType::kU64:
        case GgufValueType::kI64:
        case GgufValueType::kF64:
            return 8;
        case GgufValueType::kString:
        case GgufValueType::kArray:
            return 0;
    }
    return std::nullopt;
}

// Smallest encoding of one element: a string is at least its u64 length, an array its u32
// element type and u64 count.
uint64_t min_encoded_size(GgufValueType type) {
    if (type == GgufValueType::kString) return 8;
    if (type == GgufValueType::kArray) return 12;
    return *scalar_size(type);
}

Status skip_value(GgufValueType type, ByteCursor& cursor, int depth);

Status skip_array(ByteCursor& cursor, int depth) {
    if (depth >= kMaxArrayDepth)
        return data_loss(fmt::format("arrays nested deeper than {} levels", kMaxArrayDepth));
    uint32_t elem_raw = 0;
    uint64_t count = 0;
    if (!cursor.read(&elem_raw) || !cursor.read(&count))
        return data_loss("truncated: array header does not fit in the file");
    const auto elem = static_cast<GgufValueType>(elem_raw);
    if (!scalar_size(elem))
        return data_loss(fmt::format("array of unknown value type {}", elem_raw));
    const uint64_t min_size = min_encoded_size(elem);
    if (count > cursor.remaining() / min_size) {
        return data_loss(fmt::format("truncated: array of {} {} cannot fit in the {} bytes left",
                                     count, gguf_value_type_name(elem), cursor.remaining()));
    }
    if (*scalar_size(elem) != 0) {
        cursor.skip(count * min_size);  // fits: checked above
        return {};
    }
    for (uint64_t i = 0; i < count; ++i) {
        Status status = skip_value(elem, cursor, depth + 1);
        if (!status.ok()) return status.with_context(fmt::format("array element {}", i));
    }
    return {};
}

Status skip_value(GgufValueType type, ByteCursor& cursor, int depth) {
    const std::optional<uint64_t> size = scalar_size(type);
    if (!size) return data_loss(fmt::format("unknown value type {}", static_cast<uint32_t>(type)));
    if (type == GgufValueType::kArray) return skip_array(cursor, depth);
    if (type == GgufValueType::kString) {
        std::string_view text;
        if (!cursor.read_string(&text))
            return data_loss("truncated: string length runs past the end of the file");
        return {};
    }
    if (!cursor.skip(*size)) {
        return data_loss(
            fmt::format("truncated: {} does not fit in the file", gguf_value_type_name(type)));
    }
    return {};
}

template <typename T>
T load(std::span<const uint8_t> bytes) {
    SE_CHECK(bytes.size() >= sizeof(T));
    T value;
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::kU8:
            return "UINT8";
        case GgufValueType::kI8:
            return "INT8";
        case GgufValueType::kU16:
            return "UINT16";
        case GgufValueType::kI16:
            return "INT16";
        case GgufValueType::kU32:
            return "UINT32";
        case GgufValueType::kI32:
            return "INT32";
        case GgufValueType::kF32:
            return "FLOAT32";
        case GgufValueType::kBool:
            return "BOOL";
        case GgufValueType::kString:
            return "STRING";
        case GgufValueType::kArray:
            return "ARRAY";
        case GgufValueType::kU64:
            return "UINT64";
        case GgufValueType::kI64:
            return "INT64";
        case GgufValueType::kF64:
            return "FLOAT64";
    }
    return "unknown type";
}

Status skip_gguf_value(GgufValueType type, ByteCursor& cursor) {
    return skip_value(type, cursor, 0);
}

std::optional<int64_t> GgufValue::as_int() const {
    switch (type_) {
        case GgufValueType::kU8:
            return load<uint8_t>(bytes_);
        case GgufValueType::kI8:
            return load<int8_t>(bytes_);
        case GgufValueType::kU16:
            return load<uint16_t>(bytes_);
        case GgufValueType::kI16:
            return load<int16_t>(bytes_);
        case GgufValueType::kU32:
            return load<uint32_t>(bytes_);
        case GgufValueType::kI32:
            return load<int32_t>(bytes_);
        case GgufValueType::kI64:
            return load<int64_t>(bytes_);
        case GgufValueType::kU64: {
            const auto v = load<uint64_t>(bytes_);
            if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
            return static_cast<int64_t>(v);
        }
        case GgufValueType::kF32:
        case GgufValueType::kF64:
        case GgufValueType::kBool:
        case GgufValueType::kString:
        case GgufValueType::kArray:
            return std::nullopt;
    }
    return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
    if (type_ == GgufValueType::kF32) return load<float>(bytes_);
    if (type_ == GgufValueType::kF64) return load<double>(bytes_);
    return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
    if (type_ != GgufValueType::kBool) return std::nullopt;
    return load<uint8_t>(bytes_) != 0;
}

std::optional<std::string_view> GgufValue::as_string() const {
    if (type_ != GgufValueType::kString) return std::nullopt;
    ByteCursor cursor(bytes_, 0);
    std::string_view text;
    SE_CHECK(cursor.read_string(&text), "GGUF string was not validated");
    return text;
}

GgufValueType GgufValue::elem_type() const {
    SE_CHECK(is_array());
    return static_cast<GgufValueType>(load<uint32_t>(bytes_));
}

uint64_t GgufValue::array_size() const {
    SE_CHECK(is_array());
    return load<uint64_t>(bytes_.subspan(4));
}

std::vector<GgufValue> GgufValue::array_items() const {
    const GgufValueType elem = elem_type();
    const uint64_t count = array_size();
    std::vector<GgufValue> items;
    items.reserve(count);  // bounded by the file size: validated when the file was opened
    ByteCursor cursor(bytes_, 12);
    for (uint64_t i = 0; i < count; ++i) {
        const size_t begin = cursor.pos();
        SE_CHECK(skip_gguf_value(elem, cursor).ok(), "GGUF array was not validated");
        items.emplace_back(elem, bytes_.subspan(begin, cursor.pos() - begin));
    }
    return items;
}

}  // namespace se
