#include "backend/cuda/cuda_graph.h"

#include <memory>
#include <utility>

#include "backend/cuda/cuda_status.h"

namespace se::cuda {
namespace {

struct GraphDeleter {
    void operator()(cudaGraph_t graph) const { cudaGraphDestroy(graph); }
};

}  // namespace

CudaGraphExec::~CudaGraphExec() {
    release();
}

CudaGraphExec::CudaGraphExec(CudaGraphExec&& other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraphExec& CudaGraphExec::operator=(CudaGraphExec&& other) noexcept {
    if (this != &other) {
        release();
        exec_ = std::exchange(other.exec_, nullptr);
    }
    return *this;
}

void CudaGraphExec::release() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
}

Status CudaGraphExec::begin_capture(cudaStream_t stream) {
    // Thread-local: another thread's unsafe calls (an engine's, a test's) do not break this
    // capture, and this thread's own are refused, which is what CudaOps wants to hear about.
    SE_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    return {};
}

Expected<CudaGraphExec> CudaGraphExec::end_capture(cudaStream_t stream) {
    cudaGraph_t raw = nullptr;
    SE_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream, &raw));
    const std::unique_ptr<CUgraph_st, GraphDeleter> graph(raw);
    cudaGraphExec_t exec = nullptr;
    SE_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&exec, graph.get(), 0));
    return CudaGraphExec(exec);
}

Status CudaGraphExec::launch(cudaStream_t stream) const {
    SE_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream));
    return {};
}

}  // namespace se::cuda
