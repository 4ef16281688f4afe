// Test-only: builds GGUF files byte by byte, and reports where each section starts so tests can
// truncate or corrupt them at a chosen place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf_value.h"

namespace se::testing {

// GGML type ids used by the tests.
inline constexpr uint32_t kGgmlF32 = 0;
inline constexpr uint32_t kGgmlF16 = 1;
inline constexpr uint32_t kGgmlQ4_0 = 2;
inline constexpr uint32_t kGgmlQ4_1 = 3;
inline constexpr uint32_t kGgmlQ8_0 = 8;
inline constexpr uint32_t kGgmlQ4_K = 12;
inline constexpr uint32_t kGgmlBF16 = 30;

// Bytes of a tensor of `type` with ne[0] = cols and `num_elems` elements.
size_t ggml_bytes(uint32_t type, int64_t num_elems);

// Encodings of values, for add_raw and nested arrays.
std::vector<uint8_t> encode_string(const std::string& s);
std::vector<uint8_t> encode_array(GgufValueType elem, uint64_t count,
                                  const std::vector<uint8_t>& payload);

struct GgufLayout {
    size_t kv_begin = 0;                // first metadata entry
    size_t tensor_infos_begin = 0;      // first tensor info
    size_t data_begin = 0;              // data section
    std::vector<size_t> offset_fields;  // per tensor, position of its u64 offset field
    std::vector<size_t> type_fields;    // per tensor, position of its u32 type field
};

class GgufWriter {
  public:
    GgufWriter& set_version(uint32_t version);
    // Also writes general.alignment (as UINT32).
    GgufWriter& set_alignment(uint32_t alignment);

    GgufWriter& add_raw(const std::string& key, GgufValueType type, std::vector<uint8_t> value);
    GgufWriter& add_u8(const std::string& key, uint8_t v);
    GgufWriter& add_i8(const std::string& key, int8_t v);
    GgufWriter& add_u16(const std::string& key, uint16_t v);
    GgufWriter& add_i16(const std::string& key, int16_t v);
    GgufWriter& add_u32(const std::string& key, uint32_t v);
    GgufWriter& add_i32(const std::string& key, int32_t v);
    GgufWriter& add_u64(const std::string& key, uint64_t v);
    GgufWriter& add_i64(const std::string& key, int64_t v);
    GgufWriter& add_f32(const std::string& key, float v);
    GgufWriter& add_f64(const std::string& key, double v);
    GgufWriter& add_bool(const std::string& key, bool v);
    GgufWriter& add_string(const std::string& key, const std::string& v);
    GgufWriter& add_string_array(const std::string& key, const std::vector<std::string>& v);
    GgufWriter& add_i32_array(const std::string& key, const std::vector<int32_t>& v);
    GgufWriter& add_f32_array(const std::string& key, const std::vector<float>& v);

    // ne[0] is the contiguous dimension. Data defaults to a fixed byte pattern of the right size.
    GgufWriter& add_tensor(const std::string& name, uint32_t type, std::vector<int64_t> ne);
    GgufWriter& add_tensor(const std::string& name, uint32_t type, std::vector<int64_t> ne,
                           std::vector<uint8_t> data);
    GgufWriter& add_f32_tensor(const std::string& name, std::vector<int64_t> ne,
                               const std::vector<float>& values);

    GgufWriter& remove_tensor(const std::string& name);

    std::vector<uint8_t> build(GgufLayout* layout = nullptr) const;
    // Builds and writes to `path`.
    void write(const std::string& path, GgufLayout* layout = nullptr) const;

  private:
    struct Tensor {
        std::string name;
        uint32_t type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };
    uint32_t version_ = 3;
    uint32_t alignment_ = 32;
    std::vector<std::pair<std::string, std::pair<GgufValueType, std::vector<uint8_t>>>> kvs_;
    std::vector<Tensor> tensors_;
};

}  // namespace se::testing
