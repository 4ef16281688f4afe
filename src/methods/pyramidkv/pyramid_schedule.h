// PyramidKV's per-layer budgets: KVCache-Factory's schedule, integer division throughout.
//
//   b    = budget - window                 what a layer selects outside the window, on average
//   min  = b / beta,  max = 2b - min
//   if max >= L - window:  max = L - window,  min = 2b - max
//   step = (max - min) / (N - 1)
//
//   L < budget   no compression
//   L < 2b       every layer selects b
//   otherwise    layer l selects max - l * step (the pyramid)
//
// for a prompt of L tokens and N layers; each layer keeps its selection plus the window. The
// layers average b when N - 1 divides max - min; the rounding of step adds r/2 otherwise, with
// r = (max - min) mod (N - 1). One layer (N = 1) selects b.
#pragma once

#include <cstdint>
#include <vector>

namespace se {

struct PyramidShape {
    int32_t budget = 0;  // B, entries a layer keeps on average, window included
    int32_t window = 0;  // w
    int32_t beta = 0;    // the pyramid's steepness (min = b / beta)
    int32_t num_layers = 0;
};

// i32 [num_layers] the entries outside the window each layer keeps of a prompt of `prompt_len`
// tokens; empty when the prompt stays whole.
std::vector<int32_t> pyramid_selection(const PyramidShape& shape, int32_t prompt_len);

}  // namespace se
