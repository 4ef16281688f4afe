#include "methods/adakv/window_queries.h"

#include <algorithm>
#include <iterator>

#include "core/check.h"

namespace se::adakv {

void WindowQueries::push(SeqId seq, int32_t layer, const float* rows, int32_t count) {
    auto& layers = rows_[seq];
    layers.resize(static_cast<size_t>(num_layers_));
    std::vector<float>& kept = layers.at(layer);
    kept.insert(kept.end(), rows, rows + count * row_width_);
    const int64_t most = int64_t{window_} * row_width_;
    if (static_cast<int64_t>(kept.size()) > most) {
        kept.erase(kept.begin(), kept.end() - most);
    }
}

void WindowQueries::reset(SeqId seq, int32_t layer) {
    auto it = rows_.find(seq);
    if (it != rows_.end() && !it->second.empty()) it->second.at(layer).clear();
}

std::span<const float> WindowQueries::rows(SeqId seq, int32_t layer) const {
    auto it = rows_.find(seq);
    if (it == rows_.end() || it->second.empty()) return {};
    return it->second.at(layer);
}

int32_t WindowQueries::num_rows(SeqId seq, int32_t layer) const {
    return static_cast<int32_t>(rows(seq, layer).size() / row_width_);
}

void WindowQueries::retain(const std::function<bool(SeqId)>& keep) {
    std::erase_if(rows_, [&](const auto& entry) { return !keep(entry.first); });
}

}  // namespace se::adakv
