#include "engine/metrics/metric.h"

#include <algorithm>

#include "core/check.h"

namespace se {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {
    SE_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()));
}

void Histogram::observe(double value) {
    auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
    if (it != bounds_.end()) ++counts_[it - bounds_.begin()];
    ++count_;
    sum_ += value;
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
    std::vector<uint64_t> out(counts_.size());
    uint64_t running = 0;
    for (size_t i = 0; i < counts_.size(); ++i) out[i] = running += counts_[i];
    return out;
}

}  // namespace se
