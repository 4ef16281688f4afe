#include "model/safetensors_file.h"

#include <fmt/core.h>

#include <cstring>
#include <limits>

#include "model/json_fields.h"
#include "model/weight_convert.h"

namespace se {
namespace {

constexpr size_t kMaxDims = 4;
// The safetensors format caps its header at 100 MB; a larger length is corruption.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

Expected<DType> parse_dtype_name(const std::string& path, const std::string& name,
                                 const std::string& dtype) {
    if (dtype == "F32") return DType::kF32;
    if (dtype == "F16") return DType::kF16;
    if (dtype == "BF16") return DType::kBF16;
    return unsupported(
        fmt::format("{}: tensor '{}' has dtype {}, which is not supported "
                    "(supported: F32, F16, BF16)",
                    path, name, dtype));
}

Expected<std::vector<int64_t>> parse_shape(const std::string& path, const std::string& name,
                                           const nlohmann::json& shape) {
    if (!shape.is_array())
        return data_loss(fmt::format("{}: tensor '{}': shape must be a list", path, name));
    if (shape.size() > kMaxDims) {
        return unsupported(fmt::format("{}: tensor '{}' has {} dimensions (at most {} supported)",
                                       path, name, shape.size(), kMaxDims));
    }
    std::vector<int64_t> dims;
    for (const nlohmann::json& d : shape) {
        if (!d.is_number_unsigned() ||
            d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return data_loss(
                fmt::format("{}: tensor '{}': shape entries must be non-negative "
                            "integers",
                            path, name));
        }
        dims.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    return dims;
}

Status check_offsets(const std::string& path, SafetensorsTensor& t, const nlohmann::json& offsets,
                     uint64_t data_size) {
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        return data_loss(
            fmt::format("{}: tensor '{}': data_offsets must be [begin, end]", path, t.name));
    }
    t.begin = offsets[0].get<uint64_t>();
    t.end = offsets[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size) {
        return data_loss(
            fmt::format("{}: tensor '{}': data_offsets [{}, {}] lie outside the data "
                        "section of {} bytes (file truncated?)",
                        path, t.name, t.begin, t.end, data_size));
    }
    int64_t bytes = dtype_block_bytes(t.dtype);
    for (const int64_t d : t.shape) {
        if (__builtin_mul_overflow(bytes, d, &bytes))
            return data_loss(fmt::format("{}: tensor '{}': shape is too large", path, t.name));
    }
    if (t.end - t.begin != static_cast<uint64_t>(bytes)) {
        return data_loss(
            fmt::format("{}: tensor '{}': data_offsets span {} bytes, but its shape "
                        "and dtype need {}",
                        path, t.name, t.end - t.begin, bytes));
    }
    return {};
}

Expected<SafetensorsTensor> parse_tensor(const std::string& path, const std::string& name,
                                         const nlohmann::json& entry, uint64_t data_size) {
    if (!entry.is_object())
        return data_loss(fmt::format("{}: tensor '{}': entry must be an object", path, name));
    const JsonFields fields(entry, path, name + ".");
    SE_ASSIGN_OR_RETURN(const std::optional<std::string> dtype, fields.find_string("dtype"));
    const nlohmann::json* shape = fields.find("shape");
    const nlohmann::json* offsets = fields.find("data_offsets");
    if (!dtype || shape == nullptr || offsets == nullptr) {
        return data_loss(
            fmt::format("{}: tensor '{}' needs dtype, shape and data_offsets", path, name));
    }
    SafetensorsTensor t;
    t.name = name;
    SE_ASSIGN_OR_RETURN(t.dtype, parse_dtype_name(path, name, *dtype));
    SE_ASSIGN_OR_RETURN(t.shape, parse_shape(path, name, *shape));
    SE_RETURN_IF_ERROR(check_offsets(path, t, *offsets, data_size));
    return t;
}

Status parse_metadata(const std::string& path, const nlohmann::json& meta,
                      std::map<std::string, std::string>& out) {
    if (!meta.is_object())
        return data_loss(fmt::format("{}: __metadata__ must be an object", path));
    for (const auto& [key, value] : meta.items()) {
        if (!value.is_string()) {
            return data_loss(
                fmt::format("{}: __metadata__ entry '{}' must be a string", path, key));
        }
        out.emplace(key, value.get<std::string>());
    }
    return {};
}

}  // namespace

int64_t SafetensorsTensor::rows() const {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    return rows;
}

int64_t SafetensorsTensor::cols() const {
    return shape.empty() ? 1 : shape.back();
}

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    SE_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
    SafetensorsFile file(std::move(mapped));
    SE_RETURN_IF_ERROR(file.parse());
    return file;
}

Status SafetensorsFile::parse() {
    const std::string& p = path();
    uint64_t header_len = 0;
    if (file_.size() < sizeof(header_len))
        return data_loss(fmt::format("{}: file is truncated: no header length", p));
    std::memcpy(&header_len, file_.data(), sizeof(header_len));
    if (header_len > kMaxHeaderBytes || header_len > file_.size() - sizeof(header_len)) {
        return data_loss(fmt::format("{}: header length {} does not fit in the file of {} bytes", p,
                                     header_len, file_.size()));
    }
    data_offset_ = sizeof(header_len) + header_len;
    const std::string_view text(reinterpret_cast<const char*>(file_.data()) + sizeof(header_len),
                                header_len);
    SE_ASSIGN_OR_RETURN(const nlohmann::json header, parse_json(text, p + " (header)"));
    if (!header.is_object()) return data_loss(fmt::format("{}: header must be a JSON object", p));
    const uint64_t data_size = file_.size() - data_offset_;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            SE_RETURN_IF_ERROR(parse_metadata(p, entry, metadata_));
            continue;
        }
        SE_ASSIGN_OR_RETURN(SafetensorsTensor t, parse_tensor(p, name, entry, data_size));
        tensors_.push_back(std::move(t));
    }
    return {};
}

ConstTensorView SafetensorsFile::view(const SafetensorsTensor& tensor) const {
    return {tensor.dtype, file_.data() + data_offset_ + tensor.begin, tensor.rows(), tensor.cols()};
}

Status SafetensorsFile::move_into(WeightStore& store) && {
    // The store owns the mapping before any view of it is registered, so none can dangle.
    const std::string source = path();
    const uint8_t* data = file_.data() + data_offset_;
    store.keep(std::move(file_));
    for (const SafetensorsTensor& t : tensors_) {
        SE_ASSIGN_OR_RETURN(const ConstTensorView v,
                            aligned_view({t.dtype, data + t.begin, t.rows(), t.cols()}, store));
        SE_RETURN_IF_ERROR(store.add(t.name, v).with_context(source));
    }
    return {};
}

}  // namespace se
