#include "model/gguf_file.h"

#include <fmt/core.h>

#include <cstring>
#include <limits>

#include "model/ggml_type.h"

namespace se {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kMaxDims = 4;
// Smallest encodings, to reject counts the rest of the file cannot hold before looping on them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;  // key length, value type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name, n_dims, ne[0], type, offset

Status truncated(const std::string& path, std::string_view what, size_t pos) {
    return data_loss(
        fmt::format("{}: file is truncated: {} at byte {} runs past the end", path, what, pos));
}

// a * b, or nullopt when it overflows int64.
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
    return out;
}

}  // namespace

Expected<GgufFile> GgufFile::open(const std::string& path) {
    SE_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
    GgufFile file(std::move(mapped));
    SE_RETURN_IF_ERROR(file.parse());
    return file;
}

Status GgufFile::parse() {
    const std::string& p = path();
    if (file_.size() == 0)
        return data_loss(fmt::format("{}: file is empty, expected a GGUF model", p));
    ByteCursor cursor(file_.bytes(), 0);
    uint32_t magic = 0;
    if (!cursor.read(&magic) || magic != kMagic)
        return data_loss(fmt::format("{}: not a GGUF file (the magic bytes are not 'GGUF')", p));
    if (!cursor.read(&version_)) return truncated(p, "the header", cursor.pos());
    if (version_ != 2 && version_ != 3) {
        return unsupported(
            fmt::format("{}: GGUF version {} is not supported (supported: 2, 3)", p, version_));
    }
    uint64_t tensor_count = 0;
    uint64_t kv_count = 0;
    if (!cursor.read(&tensor_count) || !cursor.read(&kv_count))
        return truncated(p, "the header", cursor.pos());
    SE_RETURN_IF_ERROR(parse_metadata(cursor, kv_count));
    SE_RETURN_IF_ERROR(parse_tensor_infos(cursor, tensor_count));
    return place_tensors(cursor.pos());
}

Status GgufFile::parse_metadata(ByteCursor& cursor, uint64_t kv_count) {
    const std::string& p = path();
    if (kv_count > cursor.remaining() / kMinKvBytes) {
        return data_loss(
            fmt::format("{}: file is truncated or corrupt: kv_count {} needs at least "
                        "{} bytes per metadata entry, only {} bytes left",
                        p, kv_count, kMinKvBytes, cursor.remaining()));
    }
    for (uint64_t i = 0; i < kv_count; ++i) {
        std::string_view key;
        if (!cursor.read_string(&key))
            return truncated(p, fmt::format("the key of metadata entry {}", i), cursor.pos());
        uint32_t type_raw = 0;
        if (!cursor.read(&type_raw))
            return truncated(p, fmt::format("the type of metadata key '{}'", key), cursor.pos());
        const auto type = static_cast<GgufValueType>(type_raw);
        const size_t begin = cursor.pos();
        Status status = skip_gguf_value(type, cursor);
        if (!status.ok()) return status.with_context(fmt::format("{}: metadata key '{}'", p, key));
        GgufValue value(type, file_.bytes().subspan(begin, cursor.pos() - begin));
        if (!metadata_.emplace(std::string(key), value).second)
            return data_loss(fmt::format("{}: metadata key '{}' appears twice", p, key));
    }
    if (const GgufValue* align = find("general.alignment")) {
        const std::optional<int64_t> v = align->as_int();
        if (!v || *v <= 0 || (*v & (*v - 1)) != 0) {
            return data_loss(
                fmt::format("{}: general.alignment must be a positive power of two", p));
        }
        alignment_ = static_cast<uint64_t>(*v);
    }
    return {};
}

Status GgufFile::parse_tensor_infos(ByteCursor& cursor, uint64_t tensor_count) {
    if (tensor_count > cursor.remaining() / kMinTensorInfoBytes) {
        return data_loss(
            fmt::format("{}: file is truncated or corrupt: tensor_count {} needs at "
                        "least {} bytes per tensor info, only {} bytes left",
                        path(), tensor_count, kMinTensorInfoBytes, cursor.remaining()));
    }
    tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) SE_RETURN_IF_ERROR(read_tensor_info(cursor, i));
    return {};
}

Status GgufFile::read_tensor_info(ByteCursor& cursor, uint64_t index) {
    const std::string& p = path();
    std::string_view name;
    if (!cursor.read_string(&name))
        return truncated(p, fmt::format("the name of tensor {}", index), cursor.pos());
    const std::string what = fmt::format("the info of tensor '{}'", name);
    GgufTensorInfo info;
    info.name = std::string(name);
    if (!cursor.read(&info.num_dims)) return truncated(p, what, cursor.pos());
    if (info.num_dims == 0 || info.num_dims > kMaxDims) {
        return data_loss(fmt::format("{}: tensor '{}' has {} dimensions (expected 1 to {})", p,
                                     name, info.num_dims, kMaxDims));
    }
    int64_t num_elems = 1;
    for (uint32_t d = 0; d < info.num_dims; ++d) {
        uint64_t ne = 0;
        if (!cursor.read(&ne)) return truncated(p, what, cursor.pos());
        const std::optional<int64_t> product =
            ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                ? std::nullopt
                : checked_mul(num_elems, static_cast<int64_t>(ne));
        if (!product)
            return data_loss(fmt::format("{}: tensor '{}' has too many elements", p, name));
        info.ne[d] = static_cast<int64_t>(ne);
        num_elems = *product;
    }
    if (!cursor.read(&info.ggml_type) || !cursor.read(&info.offset))
        return truncated(p, what, cursor.pos());
    const std::optional<DType> dtype = dtype_from_ggml_type(info.ggml_type);
    if (!dtype) {
        return unsupported(
            fmt::format("{}: tensor '{}' has type {}, which is not supported "
                        "(supported: {})",
                        p, name, ggml_type_name(info.ggml_type), kSupportedGgmlTypes));
    }
    info.dtype = *dtype;
    if (info.ne[0] % dtype_block_elems(info.dtype) != 0) {
        return data_loss(fmt::format(
            "{}: tensor '{}' of type {} has {} columns, not a multiple of "
            "its block size {}",
            p, name, dtype_name(info.dtype), info.ne[0], dtype_block_elems(info.dtype)));
    }
    // Bytes per block <= 34 for 32 elements, so this cannot overflow once num_elems fits.
    info.num_bytes = static_cast<uint64_t>(num_elems / dtype_block_elems(info.dtype)) *
                     static_cast<uint64_t>(dtype_block_bytes(info.dtype));
    if (!tensor_index_.emplace(info.name, tensors_.size()).second)
        return data_loss(fmt::format("{}: tensor '{}' appears twice", p, name));
    tensors_.push_back(std::move(info));
    return {};
}

Status GgufFile::place_tensors(size_t infos_end) {
    const std::string& p = path();
    const uint64_t size = file_.size();
    // infos_end <= size and alignment is a power of two far below 2^63: no overflow.
    data_offset_ = (infos_end + alignment_ - 1) / alignment_ * alignment_;
    for (const GgufTensorInfo& t : tensors_) {
        if (t.offset % alignment_ != 0) {
            return data_loss(
                fmt::format("{}: tensor '{}' starts at offset {}, not a multiple of "
                            "the alignment {}",
                            p, t.name, t.offset, alignment_));
        }
        const uint64_t available = data_offset_ <= size ? size - data_offset_ : 0;
        if (t.offset > available || t.num_bytes > available - t.offset) {
            return data_loss(
                fmt::format("{}: file is truncated: the data of tensor '{}' ({} bytes "
                            "at offset {}) runs past the end of the file",
                            p, t.name, t.num_bytes, data_offset_ + t.offset));
        }
    }
    return {};
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

std::vector<std::string_view> GgufFile::keys() const {
    std::vector<std::string_view> out;
    out.reserve(metadata_.size());
    for (const auto& [key, value] : metadata_) out.push_back(key);
    return out;
}

Status GgufFile::type_error(std::string_view key, const GgufValue& value,
                            std::string_view expected) const {
    return invalid_argument(fmt::format("{}: metadata key '{}' has type {}, expected {}", path(),
                                        key, gguf_value_type_name(value.type()), expected));
}

Expected<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr)
        return not_found(fmt::format("{}: metadata key '{}' is missing", path(), key));
    const std::optional<int64_t> v = value->as_int();
    if (!v) return type_error(key, *value, "an integer");
    return *v;
}

Expected<int64_t> GgufFile::get_int_or(std::string_view key, int64_t fallback) const {
    return find(key) == nullptr ? Expected<int64_t>(fallback) : get_int(key);
}

Expected<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr)
        return not_found(fmt::format("{}: metadata key '{}' is missing", path(), key));
    if (const std::optional<double> v = value->as_float()) return *v;
    if (const std::optional<int64_t> v = value->as_int()) return static_cast<double>(*v);
    return type_error(key, *value, "a number");
}

Expected<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
    return find(key) == nullptr ? Expected<double>(fallback) : get_float(key);
}

Expected<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr)
        return not_found(fmt::format("{}: metadata key '{}' is missing", path(), key));
    const std::optional<bool> v = value->as_bool();
    if (!v) return type_error(key, *value, "BOOL");
    return *v;
}

Expected<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
    return find(key) == nullptr ? Expected<bool>(fallback) : get_bool(key);
}

Expected<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr)
        return not_found(fmt::format("{}: metadata key '{}' is missing", path(), key));
    const std::optional<std::string_view> v = value->as_string();
    if (!v) return type_error(key, *value, "STRING");
    return std::string(*v);
}

Expected<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
    return find(key) == nullptr ? Expected<std::string>(std::move(fallback)) : get_string(key);
}

Status GgufFile::for_each_item(std::string_view key, std::string_view expected,
                               const std::function<bool(const GgufValue&)>& convert) const {
    const GgufValue* value = find(key);
    if (value == nullptr)
        return not_found(fmt::format("{}: metadata key '{}' is missing", path(), key));
    if (!value->is_array()) return type_error(key, *value, expected);
    for (const GgufValue& item : value->array_items()) {
        if (!convert(item)) {
            return invalid_argument(
                fmt::format("{}: metadata key '{}' is an array of {}, expected {}", path(), key,
                            gguf_value_type_name(item.type()), expected));
        }
    }
    return {};
}

Expected<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    std::vector<std::string> out;
    SE_RETURN_IF_ERROR(for_each_item(key, "an array of STRING", [&out](const GgufValue& item) {
        const std::optional<std::string_view> v = item.as_string();
        if (v) out.emplace_back(*v);
        return v.has_value();
    }));
    return out;
}

Expected<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
    std::vector<int64_t> out;
    SE_RETURN_IF_ERROR(for_each_item(key, "an array of integers", [&out](const GgufValue& item) {
        const std::optional<int64_t> v = item.as_int();
        if (v) out.push_back(*v);
        return v.has_value();
    }));
    return out;
}

Expected<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
    std::vector<double> out;
    SE_RETURN_IF_ERROR(for_each_item(key, "an array of floats", [&out](const GgufValue& item) {
        const std::optional<double> v = item.as_float();
        if (v) out.push_back(*v);
        return v.has_value();
    }));
    return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Expected<ConstTensorView> GgufFile::tensor(std::string_view name) const {
    const GgufTensorInfo* info = find_tensor(name);
    if (info == nullptr) return not_found(fmt::format("{}: tensor '{}' is missing", path(), name));
    return view(*info);
}

ConstTensorView GgufFile::view(const GgufTensorInfo& info) const {
    return {info.dtype, file_.data() + data_offset_ + info.offset, info.rows(), info.cols()};
}

}  // namespace se
