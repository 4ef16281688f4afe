#include "methods/omnikv/omnikv_token_scores.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace se {

void candidate_scores(std::span<const float> logits, int32_t num_heads, int32_t visible,
                      int32_t first, int32_t end, std::vector<float>& scores) {
    SE_CHECK(0 <= first && first < end && end <= visible &&
                 logits.size() >= static_cast<size_t>(num_heads) * visible,
             "candidates [%d, %d) of %d entries", first, end, visible);
    scores.assign(static_cast<size_t>(end - first), 0.0f);
    for (int32_t h = 0; h < num_heads; ++h) {
        const float* z = logits.data() + int64_t{h} * visible;
        const float max = *std::max_element(z + first, z + end);
        double total = 0.0;
        for (int32_t j = first; j < end; ++j) total += std::exp(double{z[j]} - max);
        for (int32_t j = first; j < end; ++j) {
            const auto p = static_cast<float>(std::exp(double{z[j]} - max) / total);
            scores[j - first] = std::max(scores[j - first], p);
        }
    }
}

}  // namespace se
