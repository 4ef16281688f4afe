// The SM count of the current device, for the GPU kernel benchmarks that size their grids by it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/expected.h"

namespace se::cuda {

inline Expected<int32_t> device_sms() {
    int device = 0;
    int sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        return internal_error("the device's SM count");
    }
    return sms;
}

}  // namespace se::cuda
