#include "methods/pyramidkv/pyramid_schedule.h"

#include "core/check.h"

namespace se {

std::vector<int32_t> pyramid_selection(const PyramidShape& shape, int32_t prompt_len) {
    const int32_t b = shape.budget - shape.window;
    SE_CHECK(b >= 1 && shape.beta >= 1 && shape.num_layers >= 1,
             "pyramid of %d, beta %d, %d layers", b, shape.beta, shape.num_layers);
    if (prompt_len < shape.budget) return {};
    const auto layers = static_cast<size_t>(shape.num_layers);
    if (prompt_len < int64_t{2} * b || shape.num_layers == 1) {
        return std::vector<int32_t>(layers, b);
    }
    // From here 2b <= L fits in 32 bits.
    int32_t min = b / shape.beta;
    int32_t max = 2 * b - min;
    if (max >= prompt_len - shape.window) {
        max = prompt_len - shape.window;
        min = 2 * b - max;
    }
    const int32_t step = (max - min) / (shape.num_layers - 1);
    std::vector<int32_t> selected(layers);
    for (int32_t l = 0; l < shape.num_layers; ++l) selected[l] = max - l * step;
    return selected;
}

}  // namespace se
