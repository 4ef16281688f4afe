#include "model/weight_store.h"

#include <fmt/core.h>

namespace se {

const MappedFile& WeightStore::keep(MappedFile file) {
    files_.push_back(std::make_unique<MappedFile>(std::move(file)));
    return *files_.back();
}

HostBuffer& WeightStore::keep(HostBuffer buffer) {
    buffers_.push_back(std::make_unique<HostBuffer>(std::move(buffer)));
    return *buffers_.back();
}

Status WeightStore::add(std::string name, ConstTensorView view) {
    if (tensors_.count(name) != 0) return data_loss(fmt::format("tensor '{}' appears twice", name));
    tensors_.emplace(std::move(name), view);
    return {};
}

void WeightStore::replace(const std::string& name, ConstTensorView view) {
    auto it = tensors_.find(name);
    SE_CHECK(it != tensors_.end(), "replace of unknown tensor %s", name.c_str());
    it->second = view;
}

Expected<ConstTensorView> WeightStore::get(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return not_found(fmt::format("weight '{}' is missing", name));
    return it->second;
}

Expected<ConstTensorView> WeightStore::get(const std::string& name, int64_t rows,
                                           int64_t cols) const {
    SE_ASSIGN_OR_RETURN(ConstTensorView view, get(name));
    if (view.rows != rows || view.cols != cols) {
        return data_loss(fmt::format("weight '{}' has shape [{}, {}], expected [{}, {}]", name,
                                     view.rows, view.cols, rows, cols));
    }
    return view;
}

int64_t WeightStore::total_bytes() const {
    int64_t total = 0;
    for (const auto& [name, view] : tensors_) total += view.rows * view.row_bytes();
    return total;
}

}  // namespace se
