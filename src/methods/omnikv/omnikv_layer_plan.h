// What each layer of the model does in an OmniKV decode step, from the filter layers:
//
//   layer:   0 .. f1      f1+1 .. f1+w    f1+w+1 .. f2-1    f2    f2+1 .. f2+w    ...
//   role:    dense        dense (wait)    target of f1      filter  dense (wait)   ...
//            (f1 itself is a filter: it reads everything, then chooses the set)
//
// A filter reads every entry and, after its attention, chooses the entries its targets read. A
// target reads the set of the nearest filter before it. Layers up to the first filter and the
// `num_wait_load_layers` layers right after each filter read everything.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace se {

enum class OmniKvRole : uint8_t { kDense, kFilter, kTarget };

struct OmniKvLayer {
    OmniKvRole role = OmniKvRole::kDense;
    int32_t filter = 0;  // kTarget: the filter layer whose set it reads
};

struct OmniKvLayerPlan {
    std::vector<OmniKvLayer> layers;  // one per model layer

    // Whether `layer` is a filter some target reads from (only those need to score).
    bool feeds_targets(int32_t layer) const;
    int32_t num_targets() const;
};

// The default filter layers: the Llama-3-8B profile {2, 8, 18} of 32 layers scaled to
// `num_layers` (floor(f * num_layers / 32)), clamped to [1, num_layers - 2] (to [0, 0] for two
// layers), without repeats, ascending. Empty for a model of one layer.
std::vector<int32_t> default_filter_layers(int32_t num_layers);

// Roles from filter layers (ascending, without repeats, each in [0, num_layers)).
OmniKvLayerPlan plan_layers(int32_t num_layers, std::span<const int32_t> filters,
                            int32_t num_wait_load_layers);

}  // namespace se
