// CudaEvent: an owned CUDA event, destroyed by its destructor; move-only. Timing events measure
// device time between two records (the way kernels are timed here, see bench/).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/expected.h"

namespace se::cuda {

enum class EventKind : uint8_t {
    kSync,    // ordering and host waits only (cheaper: no timestamp)
    kTiming,  // also records a timestamp for elapsed_ms
};

class CudaEvent {
  public:
    CudaEvent() = default;  // empty: no event until create()'s is moved in
    ~CudaEvent();
    CudaEvent(CudaEvent&& other) noexcept;
    CudaEvent& operator=(CudaEvent&& other) noexcept;
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    static Expected<CudaEvent> create(EventKind kind);

    cudaEvent_t get() const { return event_; }

    Status record(cudaStream_t stream) const;
    Status synchronize() const;

    // Milliseconds of device time from `start` to `end`, both timing events already recorded
    // and completed.
    static Expected<float> elapsed_ms(const CudaEvent& start, const CudaEvent& end);

  private:
    explicit CudaEvent(cudaEvent_t event) : event_(event) {}
    void release();

    cudaEvent_t event_ = nullptr;
};

}  // namespace se::cuda
