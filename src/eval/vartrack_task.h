// vartrack (RULER's variable tracking): a chain "VAR QXRTB = 12345", "VAR LMNOP = QXRTB", ...
// spread through the filler in order; the model must name every variable that ends up holding
// the value. Correct only when the answer names all of them.
#pragma once

#include "eval/sample_rng.h"
#include "eval/task_spec.h"

namespace se::eval {

inline constexpr int32_t kNumVartrackHops = 4;  // RULER's default: five variables

TaskSpec make_vartrack_spec(SampleRng& rng);

}  // namespace se::eval
