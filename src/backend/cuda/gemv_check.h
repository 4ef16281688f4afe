// The checks of a GEMV launch's parameters (gemv.h), on the host before every launch.
#pragma once

#include <cstdint>

#include "backend/cuda/gemv.h"
#include "core/status.h"

namespace se::cuda {

inline constexpr int64_t kGemvMaxK = int64_t{1} << 30;  // keeps element offsets in int32

// Ok, or an invalid-argument error naming the field of p that no launch can take.
Status check_gemv_params(const GemvParams& p);

}  // namespace se::cuda
