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
    // Wall time in the runner's execute() (in the two fields above) and, apart, waiting for
    // tokens sampled on the backend (CUDA: the rest of the forward pass on the GPU, then the
    // sampling kernels and the copy). A step's wall time less both is the host's own work
    // (scheduling, bookkeeping, metrics), during which a synchronous backend idles.
    double backend_sample_seconds = 0.0;
    // Decode steps queued before the host had the previous step's tokens (engine.h).
    int64_t overlapped_steps = 0;

    double prefill_tokens_per_second() const {
        return prefill_seconds > 0 ? prefill_tokens / prefill_seconds : 0.0;
    }
    double decode_tokens_per_second() const {
        return decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0;
    }
};

}  // namespace se
