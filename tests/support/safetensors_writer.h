// Test-only: builds .safetensors files.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace se::testing {

struct StTensor {
    std::string name;
    std::string dtype;  // "F32", "BF16", ...
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
};

StTensor f32_tensor(const std::string& name, std::vector<int64_t> shape,
                    const std::vector<float>& values);

// Header JSON for `tensors` laid out back to back, with __metadata__ when not null.
nlohmann::json safetensors_header(const std::vector<StTensor>& tensors,
                                  const nlohmann::json& metadata = nullptr);

// u64 header length | header | data, for any header text (so tests can corrupt it).
std::vector<uint8_t> safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data);

// The header padded so that the data section starts 8-byte aligned, as real files do.
std::vector<uint8_t> build_safetensors(const std::vector<StTensor>& tensors,
                                       const nlohmann::json& metadata = nullptr);

}  // namespace se::testing
