// CudaGraphExec: an owned executable CUDA graph, made from what a stream captured and destroyed by
// its destructor; move-only. The captured cudaGraph_t lives only until instantiation (the
// executable does not need it).
#pragma once

#include <cuda_runtime_api.h>

#include "core/expected.h"

namespace se::cuda {

class CudaGraphExec {
  public:
    ~CudaGraphExec();
    CudaGraphExec(CudaGraphExec&& other) noexcept;
    CudaGraphExec& operator=(CudaGraphExec&& other) noexcept;
    CudaGraphExec(const CudaGraphExec&) = delete;
    CudaGraphExec& operator=(const CudaGraphExec&) = delete;

    // Starts capturing `stream`: what is enqueued on it from this thread until end_capture
    // becomes the graph's nodes instead of running.
    static Status begin_capture(cudaStream_t stream);

    // Ends the capture begun on `stream` and instantiates what it recorded. The capture ends
    // even when this fails (the stream takes work again).
    static Expected<CudaGraphExec> end_capture(cudaStream_t stream);

    // Enqueues one run of the graph on `stream`.
    Status launch(cudaStream_t stream) const;

  private:
    explicit CudaGraphExec(cudaGraphExec_t exec) : exec_(exec) {}
    void release();

    cudaGraphExec_t exec_ = nullptr;
};

}  // namespace se::cuda
