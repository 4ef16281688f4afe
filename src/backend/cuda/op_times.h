// Device time per kind of op, for finding where a step's time goes without a profiler: each op's
// kernels are bracketed by timing events, the intervals are added up after each step's
// synchronising copy, and summary() lists the totals. Off unless asked for (SE_CUDA_OP_TIMES=1,
// see docs/gpu.md): events between kernels cost a little time themselves.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

#include "backend/cuda/event.h"
#include "core/expected.h"

namespace se::cuda {

class OpTimes {
  public:
    // Records the start of an op named `name` (a string literal) on `stream`.
    Status begin(const char* name, cudaStream_t stream);
    // Records the end of the op begun last.
    Status end(cudaStream_t stream);
    // Adds the intervals recorded so far to the totals; the stream must have synchronized.
    Status collect();
    // One line per op kind, most time first: calls, total ms, share of the timed time.
    std::string summary() const;

  private:
    Expected<size_t> next_event();

    struct Interval {
        const char* name;
        size_t start;
        size_t stop;
    };
    std::vector<CudaEvent> events_;  // reused: used_ of them recorded since the last collect()
    size_t used_ = 0;
    std::vector<Interval> pending_;
    const char* open_ = nullptr;
    size_t open_start_ = 0;
    struct Total {
        int64_t calls = 0;
        double ms = 0.0;
    };
    std::map<std::string, Total> totals_;
};

}  // namespace se::cuda
