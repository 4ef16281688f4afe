#include "engine/backend_factory.h"

#include <fmt/core.h>

#include "backend/cpu/cpu_communicator.h"
#include "backend/cpu/cpu_ops.h"

#if SE_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/nccl_communicator.h"
#endif

namespace se {
namespace {

Expected<std::unique_ptr<Ops>> create_cuda(const BackendRequest& request) {
#if SE_HAVE_CUDA
    auto ops = cuda::CudaOps::create({.device = request.device_index,
                                      .max_step_tokens = request.max_step_tokens,
                                      .max_seqs = request.max_seqs,
                                      .max_model_len = request.max_model_len,
                                      .block_size = request.block_size,
                                      .num_heads = request.num_heads,
                                      .head_dim = request.head_dim,
                                      .time_ops = request.time_ops,
                                      .graphs = !request.enforce_eager});
    if (!ops.ok()) {
        return failed_precondition(
            fmt::format("--device cuda: no usable GPU ({})", ops.status().to_string()));
    }
    return std::unique_ptr<Ops>(std::move(ops).value());
#else
    static_cast<void>(request);
    return failed_precondition(
        "--device cuda: this build has no CUDA backend (nvcc was not found when it was "
        "configured; see SE_ENABLE_CUDA)");
#endif
}

}  // namespace

Expected<std::unique_ptr<Ops>> create_backend(const BackendRequest& request) {
    if (request.device == "cuda") return create_cuda(request);
    if (request.device == "auto") {
        auto cuda = create_cuda(request);
        if (cuda.ok()) return cuda;
    } else if (request.device != "cpu") {
        return invalid_argument(
            fmt::format("--device '{}' is not one of auto, cpu, cuda", request.device));
    }
    return std::unique_ptr<Ops>(
        std::make_unique<CpuOps>(CpuOptions{.num_threads = request.num_threads}));
}

Expected<std::vector<std::unique_ptr<Communicator>>> create_communicators(
    std::span<Ops* const> ranks) {
    SE_CHECK(!ranks.empty());
    for (Ops* ops : ranks) {
        if (ops->name() != ranks.front()->name()) {
            return invalid_argument(fmt::format("tensor parallelism over {} and {} backends",
                                                ranks.front()->name(), ops->name()));
        }
    }
    if (ranks.front()->host_memory()) {
        return create_cpu_communicators(static_cast<int32_t>(ranks.size()));
    }
#if SE_HAVE_CUDA
    std::vector<cuda::CudaOps*> gpus;
    for (Ops* ops : ranks) {
        auto* gpu = dynamic_cast<cuda::CudaOps*>(ops);
        if (gpu == nullptr) {
            return failed_precondition(
                fmt::format("tensor parallelism on the {} backend", ops->name()));
        }
        gpus.push_back(gpu);
    }
    return cuda::create_nccl_communicators(gpus);
#else
    return failed_precondition(
        fmt::format("tensor parallelism on the {} backend", ranks.front()->name()));
#endif
}

}  // namespace se
