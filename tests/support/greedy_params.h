// Test-only: the sampling parameters most engine tests use.
#pragma once

#include <cstdint>

#include "engine/sampling/sampling_params.h"

namespace se::testing {

// Greedy, EOS ignored, exactly max_tokens tokens (unless a stop ends the request first).
inline SamplingParams greedy(int32_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.ignore_eos = true;
    p.max_tokens = max_tokens;
    return p;
}

}  // namespace se::testing
