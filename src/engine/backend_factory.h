// The backend an engine runs on: `--device cpu`, `--device cuda`, or `auto` (cuda when this build
// has the CUDA backend and a GPU is usable, else cpu).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <span>
#include <vector>

#include "backend/communicator.h"
#include "backend/ops.h"
#include "core/expected.h"

namespace se {

struct BackendRequest {
    std::string device = "auto";  // auto | cpu | cuda
    int32_t device_index = 0;     // cuda: which GPU (the rank, with tensor parallelism)
    int32_t num_threads = 0;      // CPU threads (cpu)
    // Sizes of the largest step, for the GPU's workspaces (cuda).
    int64_t max_step_tokens = 0;
    int32_t max_seqs = 0;
    int32_t max_model_len = 0;
    int32_t block_size = 16;
    int32_t num_heads = 0;  // the model's query heads and head_dim (cuda: decode workspace)
    int32_t head_dim = 0;
    bool time_ops = false;  // cuda: device time per op kind, printed at exit (SE_CUDA_OP_TIMES=1)
    bool enforce_eager = false;  // cuda: no CUDA graphs (--enforce-eager)
};

// invalid_argument for an unknown device name; failed_precondition naming why when cuda was asked
// for and cannot be had (built without CUDA, no GPU, driver error).
Expected<std::unique_ptr<Ops>> create_backend(const BackendRequest& request);

// The collectives of a tensor-parallel group whose rank r runs on ranks[r]: threads over shared
// memory on the CPU, NCCL on GPUs. Every rank must be on the same backend.
Expected<std::vector<std::unique_ptr<Communicator>>> create_communicators(
    std::span<Ops* const> ranks);

}  // namespace se
