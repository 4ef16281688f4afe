// One .safetensors file mapped read-only; tensors are zero-copy views of the mapping.
//
//   u64 header_len (LE) | JSON header (header_len bytes) | data section
//   header: {"__metadata__": {str: str}, "<name>": {"dtype": "BF16", "shape": [r, c],
//            "data_offsets": [begin, end]}, ...}   offsets are relative to the data section
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/expected.h"
#include "core/mapped_file.h"
#include "core/tensor_view.h"
#include "model/weight_store.h"

namespace se {

struct SafetensorsTensor {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;  // 0 to 4 dims
    uint64_t begin = 0;          // byte range inside the data section
    uint64_t end = 0;

    // As a 2-D view: cols = last dim, rows = product of the others (1-D and scalars: one row).
    int64_t rows() const;
    int64_t cols() const;
};

class SafetensorsFile {
  public:
    // Errors: not_found (no file), data_loss (bad header length, bad JSON, offsets outside the
    // data section or not matching the shape), unsupported (dtype other than F32/F16/BF16 or more
    // than 4 dims, naming the tensor). Messages start with the path.
    static Expected<SafetensorsFile> open(const std::string& path);

    const std::string& path() const { return file_.path(); }
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    ConstTensorView view(const SafetensorsTensor& tensor) const;

    // Registers every tensor in `store` (zero copy, except a tensor whose data is misaligned for
    // its dtype, which is copied) and hands it the mapping; fails on a name already there.
    Status move_into(WeightStore& store) &&;

  private:
    explicit SafetensorsFile(MappedFile file) : file_(std::move(file)) {}
    Status parse();

    MappedFile file_;
    uint64_t data_offset_ = 0;
    std::vector<SafetensorsTensor> tensors_;
    std::map<std::string, std::string> metadata_;  // __metadata__
};

}  // namespace se
