#include "methods/omnikv/omnikv_layer_plan.h"

#include <algorithm>

#include "core/check.h"

namespace se {

bool OmniKvLayerPlan::feeds_targets(int32_t layer) const {
    return std::any_of(layers.begin(), layers.end(), [&](const OmniKvLayer& l) {
        return l.role == OmniKvRole::kTarget && l.filter == layer;
    });
}

int32_t OmniKvLayerPlan::num_targets() const {
    return static_cast<int32_t>(
        std::count_if(layers.begin(), layers.end(),
                      [](const OmniKvLayer& l) { return l.role == OmniKvRole::kTarget; }));
}

std::vector<int32_t> default_filter_layers(int32_t num_layers) {
    constexpr int32_t kProfileLayers = 32;
    constexpr int32_t kProfile[] = {2, 8, 18};
    std::vector<int32_t> out;
    if (num_layers < 2) return out;
    const int32_t hi = num_layers - 2;
    const int32_t lo = std::min(1, hi);
    for (const int32_t f : kProfile) {
        const auto scaled = static_cast<int32_t>(int64_t{f} * num_layers / kProfileLayers);
        const int32_t layer = std::clamp(scaled, lo, hi);
        if (out.empty() || out.back() != layer) out.push_back(layer);
    }
    return out;
}

OmniKvLayerPlan plan_layers(int32_t num_layers, std::span<const int32_t> filters,
                            int32_t num_wait_load_layers) {
    OmniKvLayerPlan plan;
    plan.layers.assign(static_cast<size_t>(num_layers), {});
    for (size_t i = 0; i < filters.size(); ++i) {
        const int32_t f = filters[i];
        SE_CHECK(f >= 0 && f < num_layers && (i == 0 || f > filters[i - 1]),
                 "filter layer %d out of range or out of order", f);
        plan.layers[f].role = OmniKvRole::kFilter;
        const int32_t next = i + 1 < filters.size() ? filters[i + 1] : num_layers;
        for (int32_t l = f + 1 + num_wait_load_layers; l < next; ++l) {
            plan.layers[l] = {.role = OmniKvRole::kTarget, .filter = f};
        }
    }
    return plan;
}

}  // namespace se
