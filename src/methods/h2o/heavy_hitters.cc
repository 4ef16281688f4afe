#include "methods/h2o/heavy_hitters.h"

#include "core/check.h"
#include "sparse/ranking.h"

namespace se::h2o {

std::vector<int32_t> heavy_hitter_keep(std::span<const float> acc, int32_t budget, int32_t recent) {
    const auto n = static_cast<int32_t>(acc.size());
    SE_CHECK(recent >= 0 && recent <= budget && budget < n, "keep %d of %d with %d recent", budget,
             n, recent);
    const int32_t older = n - recent;
    std::vector<int32_t> keep = top_k(acc.first(static_cast<size_t>(older)), budget - recent);
    for (int32_t j = older; j < n; ++j) keep.push_back(j);
    return keep;
}

}  // namespace se::h2o
