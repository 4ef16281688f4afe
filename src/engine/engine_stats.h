// Counters of work done, for throughput reports.
#pragma once

#include <cstdint>

namespace se {

struct EngineStats {
    int64_t num_steps = 0;
    int64_t prefill_tokens = 0;
    double prefill_seconds = 0.0;
    int64_t decode_tokens = 0;
    double decode_seconds = 0.0;

    double prefill_tokens_per_second() const {
        return prefill_seconds > 0 ? prefill_tokens / prefill_seconds : 0.0;
    }
    double decode_tokens_per_second() const {
        return decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0;
    }
};

}  // namespace se
