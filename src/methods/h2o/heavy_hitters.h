// H2O's keep rule for one lane: the `recent` newest entries plus the `budget - recent` older
// entries with the most accumulated attention mass (ties to the lower index).
//
//   entries:  [ 0 .............. n - recent ) [ n - recent ... n )
//              ranked by acc, top budget-recent    always kept
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace se::h2o {

// Ascending entry indices to keep among acc.size() resident entries; budget < acc.size() and
// 0 <= recent <= budget.
std::vector<int32_t> heavy_hitter_keep(std::span<const float> acc, int32_t budget, int32_t recent);

}  // namespace se::h2o
