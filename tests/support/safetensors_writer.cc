#include "support/safetensors_writer.h"

#include <cstring>

#include "support/test_files.h"

namespace se::testing {

StTensor f32_tensor(const std::string& name, std::vector<int64_t> shape,
                    const std::vector<float>& values) {
    std::vector<uint8_t> data(values.size() * sizeof(float));
    std::memcpy(data.data(), values.data(), data.size());
    return {name, "F32", std::move(shape), std::move(data)};
}

nlohmann::json safetensors_header(const std::vector<StTensor>& tensors,
                                  const nlohmann::json& metadata) {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.is_null()) header["__metadata__"] = metadata;
    size_t offset = 0;
    for (const StTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + t.data.size()}}};
        offset += t.data.size();
    }
    return header;
}

std::vector<uint8_t> safetensors_bytes(const std::string& header,
                                       const std::vector<uint8_t>& data) {
    std::vector<uint8_t> out;
    append_le<uint64_t>(out, header.size());
    append_bytes(out, header.data(), header.size());
    append_bytes(out, data.data(), data.size());
    return out;
}

std::vector<uint8_t> build_safetensors(const std::vector<StTensor>& tensors,
                                       const nlohmann::json& metadata) {
    std::vector<uint8_t> data;
    for (const StTensor& t : tensors) append_bytes(data, t.data.data(), t.data.size());
    // Like the safetensors library: pad the header with spaces so the data starts 8-aligned.
    std::string header = safetensors_header(tensors, metadata).dump();
    header.resize((header.size() + 7) / 8 * 8, ' ');
    return safetensors_bytes(header, data);
}

}  // namespace se::testing
