#include "backend/cuda/scoped_device.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {

ScopedDevice::~ScopedDevice() {
    // A destructor has no one to report to; the call fails only with a broken context, which
    // the next checked call reports.
    if (previous_ >= 0) static_cast<void>(cudaSetDevice(previous_));
}

ScopedDevice::ScopedDevice(ScopedDevice&& other) noexcept
    : previous_(std::exchange(other.previous_, -1)) {}

Expected<ScopedDevice> ScopedDevice::enter(int32_t device) {
    int previous = 0;
    SE_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
    SE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    return ScopedDevice(previous);
}

}  // namespace se::cuda
