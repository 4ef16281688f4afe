// CudaStream: an owned non-blocking CUDA stream, destroyed by its destructor; move-only.
#pragma once

#include <cuda_runtime_api.h>

#include "core/expected.h"

namespace se::cuda {

class CudaStream {
  public:
    ~CudaStream();
    CudaStream(CudaStream&& other) noexcept;
    CudaStream& operator=(CudaStream&& other) noexcept;
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;

    // A stream that does not synchronize with the legacy default stream.
    static Expected<CudaStream> create();

    cudaStream_t get() const { return stream_; }

    // Waits for everything queued so far; an error of an earlier kernel surfaces here.
    Status synchronize() const;

  private:
    explicit CudaStream(cudaStream_t stream) : stream_(stream) {}
    void release();

    cudaStream_t stream_ = nullptr;
};

}  // namespace se::cuda
