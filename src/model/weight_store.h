// Named weight tensors of one model, and ownership of the memory behind them (file mappings or
// converted copies). Names follow HF transformers ("model.layers.0.self_attn.q_proj.weight");
// loaders of other formats translate to them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.h"
#include "core/host_buffer.h"
#include "core/mapped_file.h"
#include "core/tensor_view.h"

namespace se {

class WeightStore {
  public:
    WeightStore() = default;
    WeightStore(WeightStore&&) = default;
    WeightStore& operator=(WeightStore&&) = default;

    // Keeps `file` alive as long as the store; returns a pointer stable for that lifetime.
    const MappedFile& keep(MappedFile file);
    // Same for an owned buffer (converted or generated weights).
    HostBuffer& keep(HostBuffer buffer);
    // Same for any other owner of the memory views point into (device memory, say).
    void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }

    // Registers a tensor; fails if the name exists already.
    Status add(std::string name, ConstTensorView view);
    // Replaces a registered tensor (after a dtype conversion, say).
    void replace(const std::string& name, ConstTensorView view);

    bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
    // Error names the missing tensor.
    Expected<ConstTensorView> get(const std::string& name) const;
    // Error names the tensor and both shapes when the shape differs.
    Expected<ConstTensorView> get(const std::string& name, int64_t rows, int64_t cols) const;

    const std::map<std::string, ConstTensorView>& tensors() const { return tensors_; }
    int64_t total_bytes() const;

  private:
    std::map<std::string, ConstTensorView> tensors_;
    std::vector<std::unique_ptr<MappedFile>> files_;
    std::vector<std::unique_ptr<HostBuffer>> buffers_;
    std::vector<std::shared_ptr<const void>> owners_;
};

}  // namespace se
