#include "backend/cuda/event.h"

#include <utility>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {

CudaEvent::~CudaEvent() {
    release();
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
    if (this != &other) {
        release();
        event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
}

Expected<CudaEvent> CudaEvent::create(EventKind kind) {
    unsigned int flags = cudaEventDefault;
    switch (kind) {
        case EventKind::kSync:
            flags = cudaEventDisableTiming;
            break;
        case EventKind::kTiming:
            flags = cudaEventDefault;
            break;
    }
    cudaEvent_t event = nullptr;
    SE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, flags));
    return CudaEvent(event);
}

Status CudaEvent::record(cudaStream_t stream) const {
    return cuda_status(cudaEventRecord(event_, stream), "cudaEventRecord");
}

Status CudaEvent::synchronize() const {
    return cuda_status(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

Expected<float> CudaEvent::elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
    float ms = 0.0f;
    SE_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.event_, end.event_));
    return ms;
}

void CudaEvent::release() {
    if (event_ != nullptr) static_cast<void>(cudaEventDestroy(event_));
    event_ = nullptr;
}

}  // namespace se::cuda
