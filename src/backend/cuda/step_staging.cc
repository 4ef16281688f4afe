#include "backend/cuda/step_staging.h"

#include <algorithm>
#include <cstring>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {
namespace {

constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) {
    return (bytes + kAlign - 1) / kAlign * kAlign;
}

}  // namespace

Expected<StepStaging::Arenas> StepStaging::allocate(size_t bytes) {
    SE_ASSIGN_OR_RETURN(PinnedBuffer host, PinnedBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(DeviceBuffer device, DeviceBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(CudaEvent done, CudaEvent::create(EventKind::kSync));
    return Arenas{.host = std::move(host), .device = std::move(device), .done = std::move(done)};
}

Expected<StepStaging> StepStaging::create(size_t capacity_bytes) {
    const size_t bytes = aligned(std::max<size_t>(capacity_bytes, kAlign));
    SE_ASSIGN_OR_RETURN(Arenas first, allocate(bytes));
    SE_ASSIGN_OR_RETURN(Arenas second, allocate(bytes));
    SE_ASSIGN_OR_RETURN(CudaStream copy_stream, CudaStream::create());
    SE_ASSIGN_OR_RETURN(CudaEvent copied, CudaEvent::create(EventKind::kSync));
    return StepStaging(std::move(first), std::move(second), std::move(copy_stream),
                       std::move(copied));
}

Status StepStaging::begin_step(StagingSend send, cudaStream_t stream) {
    // Everything the finished step queued is on the stream by now: its arenas are free once the
    // stream gets past here. The other pair's event was recorded a step earlier (never recorded:
    // the wait returns at once).
    SE_RETURN_IF_ERROR(current().done.record(stream));
    current_ ^= 1;
    SE_RETURN_IF_ERROR(current().done.synchronize());
    used_ = 0;
    copies_.clear();
    trace_.clear();
    send_ = send;
    ++generation_;
    return {};
}

Status StepStaging::grow(size_t at_least, cudaStream_t stream) {
    // Copies already queued read the old pinned memory and kernels read the old device memory:
    // let them finish before either goes. Step data stays valid only within a step, so this
    // happens at most a few times in a process (the arena is sized for the largest step).
    if (send_ == StagingSend::kHostOnly) {
        return failed_precondition("step staging: the arena would grow in a graph step");
    }
    SE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    const size_t bytes = aligned(std::max(at_least, 2 * current().host.size_bytes()));
    SE_ASSIGN_OR_RETURN(current().host, PinnedBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(current().device, DeviceBuffer::allocate(bytes));
    used_ = 0;
    copies_.clear();
    trace_.clear();
    ++generation_;
    ++arena_version_;
    return {};
}

Expected<StepStaging::Slot> StepStaging::reserve(size_t bytes, cudaStream_t stream) {
    if (used_ + aligned(bytes) > current().host.size_bytes()) {
        SE_RETURN_IF_ERROR(grow(used_ + aligned(bytes), stream));
    }
    Slot slot{.host = static_cast<uint8_t*>(current().host.data()) + used_,
              .device = static_cast<uint8_t*>(current().device.data()) + used_,
              .bytes = bytes};
    trace_.add(used_, bytes);
    used_ += aligned(bytes);
    return slot;
}

Status StepStaging::send(const Slot& slot, cudaStream_t stream) const {
    if (slot.bytes == 0 || send_ == StagingSend::kHostOnly) return {};
    SE_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(slot.device, slot.host, slot.bytes, cudaMemcpyHostToDevice, stream));
    return {};
}

Status StepStaging::flush(cudaStream_t stream) {
    if (send_ != StagingSend::kHostOnly) {
        return failed_precondition("step staging: flush of a step that queues its own copies");
    }
    if (used_ == 0) return {};
    // The arena pair was last read by the step before last, which begin_step waited for: the copy
    // needs nothing of `stream`, only `stream` needs the copy.
    Arenas& a = current();
    SE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a.device.data(), a.host.data(), used_,
                                            cudaMemcpyHostToDevice, copy_stream_.get()));
    SE_RETURN_IF_ERROR(copied_.record(copy_stream_.get()));
    SE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, copied_.get(), 0));
    return {};
}

Expected<const void*> StepStaging::host_copy(const void* src, size_t bytes, cudaStream_t stream) {
    SE_ASSIGN_OR_RETURN(Slot slot, reserve(bytes, stream));
    if (bytes > 0) std::memcpy(slot.host, src, bytes);
    return static_cast<const void*>(slot.host);
}

Expected<const void*> StepStaging::upload(const void* src, size_t bytes, cudaStream_t stream) {
    const auto key = std::make_pair(src, bytes);
    if (auto it = copies_.find(key); it != copies_.end()) return it->second;
    SE_ASSIGN_OR_RETURN(Slot slot, reserve(bytes, stream));
    if (bytes > 0) std::memcpy(slot.host, src, bytes);
    SE_RETURN_IF_ERROR(send(slot, stream));
    copies_.emplace(key, slot.device);
    return static_cast<const void*>(slot.device);
}

}  // namespace se::cuda
