// A GGUF file (versions 2 and 3) mapped read-only. open() validates the whole structure before
// anything is handed out: every count and length fits in the file, every tensor lies inside the
// data section at an aligned offset with a type this engine reads. Tensor data stays in the
// mapping (zero copy).
//
//   magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   kv_count x  (string key, u32 value type, value)
//   tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset)
//   padding to general.alignment | data section (tensor offsets are relative to its start)
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "core/mapped_file.h"
#include "core/tensor_view.h"
#include "model/gguf_value.h"

namespace se {

struct GgufTensorInfo {
    std::string name;
    uint32_t ggml_type = 0;
    DType dtype = DType::kF32;
    uint32_t num_dims = 0;
    std::array<int64_t, 4> ne = {1, 1, 1, 1};  // ne[0] is the contiguous (innermost) dimension
    uint64_t offset = 0;                       // from the start of the data section
    uint64_t num_bytes = 0;

    // As a 2-D view: cols = ne[0], rows = ne[1] * ne[2] * ne[3].
    int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
    int64_t cols() const { return ne[0]; }
};

class GgufFile {
  public:
    static constexpr uint64_t kDefaultAlignment = 32;

    // Errors: not_found (no such file), data_loss (bad magic, truncated or inconsistent
    // structure), unsupported (version, tensor type). Messages start with the path.
    static Expected<GgufFile> open(const std::string& path);

    const std::string& path() const { return file_.path(); }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }

    // Metadata. find() returns nullptr for an absent key. The typed getters fail with not_found
    // for an absent key and invalid_argument for a value of another type; the *_or variants
    // return `fallback` for an absent key and still fail on a wrong type.
    const GgufValue* find(std::string_view key) const;
    std::vector<std::string_view> keys() const;
    Expected<int64_t> get_int(std::string_view key) const;
    Expected<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
    Expected<double> get_float(std::string_view key) const;  // integers are accepted too
    Expected<double> get_float_or(std::string_view key, double fallback) const;
    Expected<bool> get_bool(std::string_view key) const;
    Expected<bool> get_bool_or(std::string_view key, bool fallback) const;
    Expected<std::string> get_string(std::string_view key) const;
    Expected<std::string> get_string_or(std::string_view key, std::string fallback) const;
    Expected<std::vector<std::string>> get_string_array(std::string_view key) const;
    Expected<std::vector<int64_t>> get_int_array(std::string_view key) const;
    Expected<std::vector<double>> get_float_array(std::string_view key) const;

    // Tensors, in file order.
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    // not_found naming the tensor and the file when absent.
    Expected<ConstTensorView> tensor(std::string_view name) const;
    ConstTensorView view(const GgufTensorInfo& info) const;

    // Hands the mapping over (to a WeightStore) so views outlive this object; the metadata
    // accessors must not be used afterwards.
    MappedFile release_mapping() && { return std::move(file_); }

  private:
    explicit GgufFile(MappedFile file) : file_(std::move(file)) {}
    Status parse();
    Status parse_metadata(ByteCursor& cursor, uint64_t kv_count);
    Status parse_tensor_infos(ByteCursor& cursor, uint64_t tensor_count);
    Status read_tensor_info(ByteCursor& cursor, uint64_t index);
    Status place_tensors(size_t infos_end);
    Status type_error(std::string_view key, const GgufValue& value,
                      std::string_view expected) const;
    // Applies `convert` to every element of the array under `key`; wraps its failures.
    Status for_each_item(std::string_view key, std::string_view expected,
                         const std::function<bool(const GgufValue&)>& convert) const;

    MappedFile file_;
    uint32_t version_ = 0;
    uint64_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    std::map<std::string, GgufValue, std::less<>> metadata_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace se
