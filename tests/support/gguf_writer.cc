#include "support/gguf_writer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "support/test_files.h"

namespace se::testing {

size_t ggml_bytes(uint32_t type, int64_t num_elems) {
    const auto n = static_cast<size_t>(num_elems);
    switch (type) {
        case kGgmlF32:
            return n * 4;
        case kGgmlF16:
        case kGgmlBF16:
            return n * 2;
        case kGgmlQ8_0:
            return n / 32 * 34;
        case kGgmlQ4_0:
            return n / 32 * 18;
        case kGgmlQ4_1:
            return n / 32 * 20;
        case kGgmlQ4_K:
            return n / 256 * 144;
        default:
            ADD_FAILURE() << "ggml_bytes: type " << type << " not known to the test writer";
            return 0;
    }
}

std::vector<uint8_t> encode_string(const std::string& s) {
    std::vector<uint8_t> out;
    append_le<uint64_t>(out, s.size());
    append_bytes(out, s.data(), s.size());
    return out;
}

std::vector<uint8_t> encode_array(GgufValueType elem, uint64_t count,
                                  const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> out;
    append_le<uint32_t>(out, static_cast<uint32_t>(elem));
    append_le<uint64_t>(out, count);
    append_bytes(out, payload.data(), payload.size());
    return out;
}

GgufWriter& GgufWriter::set_version(uint32_t version) {
    version_ = version;
    return *this;
}

GgufWriter& GgufWriter::set_alignment(uint32_t alignment) {
    alignment_ = alignment;
    return add_u32("general.alignment", alignment);
}

GgufWriter& GgufWriter::add_raw(const std::string& key, GgufValueType type,
                                std::vector<uint8_t> value) {
    kvs_.push_back({key, {type, std::move(value)}});
    return *this;
}

template <typename T>
static std::vector<uint8_t> le_bytes(T v) {
    std::vector<uint8_t> out;
    append_le(out, v);
    return out;
}

GgufWriter& GgufWriter::add_u8(const std::string& key, uint8_t v) {
    return add_raw(key, GgufValueType::kU8, le_bytes(v));
}
GgufWriter& GgufWriter::add_i8(const std::string& key, int8_t v) {
    return add_raw(key, GgufValueType::kI8, le_bytes(v));
}
GgufWriter& GgufWriter::add_u16(const std::string& key, uint16_t v) {
    return add_raw(key, GgufValueType::kU16, le_bytes(v));
}
GgufWriter& GgufWriter::add_i16(const std::string& key, int16_t v) {
    return add_raw(key, GgufValueType::kI16, le_bytes(v));
}
GgufWriter& GgufWriter::add_u32(const std::string& key, uint32_t v) {
    return add_raw(key, GgufValueType::kU32, le_bytes(v));
}
GgufWriter& GgufWriter::add_i32(const std::string& key, int32_t v) {
    return add_raw(key, GgufValueType::kI32, le_bytes(v));
}
GgufWriter& GgufWriter::add_u64(const std::string& key, uint64_t v) {
    return add_raw(key, GgufValueType::kU64, le_bytes(v));
}
GgufWriter& GgufWriter::add_i64(const std::string& key, int64_t v) {
    return add_raw(key, GgufValueType::kI64, le_bytes(v));
}
GgufWriter& GgufWriter::add_f32(const std::string& key, float v) {
    return add_raw(key, GgufValueType::kF32, le_bytes(v));
}
GgufWriter& GgufWriter::add_f64(const std::string& key, double v) {
    return add_raw(key, GgufValueType::kF64, le_bytes(v));
}
GgufWriter& GgufWriter::add_bool(const std::string& key, bool v) {
    return add_raw(key, GgufValueType::kBool, le_bytes<uint8_t>(v ? 1 : 0));
}
GgufWriter& GgufWriter::add_string(const std::string& key, const std::string& v) {
    return add_raw(key, GgufValueType::kString, encode_string(v));
}

GgufWriter& GgufWriter::add_string_array(const std::string& key,
                                         const std::vector<std::string>& v) {
    std::vector<uint8_t> payload;
    for (const std::string& s : v) {
        const std::vector<uint8_t> e = encode_string(s);
        append_bytes(payload, e.data(), e.size());
    }
    return add_raw(key, GgufValueType::kArray,
                   encode_array(GgufValueType::kString, v.size(), payload));
}

GgufWriter& GgufWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    std::vector<uint8_t> payload;
    for (const int32_t x : v) append_le(payload, x);
    return add_raw(key, GgufValueType::kArray,
                   encode_array(GgufValueType::kI32, v.size(), payload));
}

GgufWriter& GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& v) {
    std::vector<uint8_t> payload;
    for (const float x : v) append_le(payload, x);
    return add_raw(key, GgufValueType::kArray,
                   encode_array(GgufValueType::kF32, v.size(), payload));
}

GgufWriter& GgufWriter::add_tensor(const std::string& name, uint32_t type,
                                   std::vector<int64_t> ne) {
    int64_t n = 1;
    for (const int64_t d : ne) n *= d;
    std::vector<uint8_t> data(ggml_bytes(type, n));
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<uint8_t>((i * 7 + tensors_.size()) % 251);
    return add_tensor(name, type, std::move(ne), std::move(data));
}

GgufWriter& GgufWriter::add_tensor(const std::string& name, uint32_t type, std::vector<int64_t> ne,
                                   std::vector<uint8_t> data) {
    tensors_.push_back({name, type, std::move(ne), std::move(data)});
    return *this;
}

GgufWriter& GgufWriter::add_f32_tensor(const std::string& name, std::vector<int64_t> ne,
                                       const std::vector<float>& values) {
    std::vector<uint8_t> data(values.size() * sizeof(float));
    std::memcpy(data.data(), values.data(), data.size());
    return add_tensor(name, kGgmlF32, std::move(ne), std::move(data));
}

GgufWriter& GgufWriter::remove_tensor(const std::string& name) {
    std::erase_if(tensors_, [&](const Tensor& t) { return t.name == name; });
    return *this;
}

std::vector<uint8_t> GgufWriter::build(GgufLayout* layout) const {
    GgufLayout local;
    GgufLayout& l = layout != nullptr ? *layout : local;
    std::vector<uint8_t> out;
    append_bytes(out, "GGUF", 4);
    append_le<uint32_t>(out, version_);
    append_le<uint64_t>(out, tensors_.size());
    append_le<uint64_t>(out, kvs_.size());
    l.kv_begin = out.size();
    for (const auto& [key, value] : kvs_) {
        const std::vector<uint8_t> k = encode_string(key);
        append_bytes(out, k.data(), k.size());
        append_le<uint32_t>(out, static_cast<uint32_t>(value.first));
        append_bytes(out, value.second.data(), value.second.size());
    }
    l.tensor_infos_begin = out.size();
    const auto align = [this](size_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        const std::vector<uint8_t> name = encode_string(t.name);
        append_bytes(out, name.data(), name.size());
        append_le<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
        for (const int64_t d : t.ne) append_le<uint64_t>(out, static_cast<uint64_t>(d));
        l.type_fields.push_back(out.size());
        append_le<uint32_t>(out, t.type);
        l.offset_fields.push_back(out.size());
        append_le<uint64_t>(out, offset);
        offset = align(offset + t.data.size());
    }
    out.resize(align(out.size()));
    l.data_begin = out.size();
    for (const Tensor& t : tensors_) {
        append_bytes(out, t.data.data(), t.data.size());
        out.resize(l.data_begin + align(out.size() - l.data_begin));
    }
    return out;
}

void GgufWriter::write(const std::string& path, GgufLayout* layout) const {
    write_file(path, build(layout));
}

}  // namespace se::testing
