// The GPUs' tensor-parallel group: ranks are threads of one process, one GPU each, exchanging
// through NCCL (one communicator per GPU, made together by ncclCommInitAll). A rank's collectives
// are queued on its CudaOps' stream, in order with its kernels: in a decode step captured as a
// CUDA graph they become nodes of the graph, and in a replayed step they queue nothing (the graph
// holds them), as the ops do.
//
// Each rank calls its collectives from the thread that runs its CudaOps (its GPU current).
// all_reduce_host and all_equal wait for the stream, so they run outside captures (between steps
// or in eager ones). all_gather_cols derives every rank's width from out.cols:
// c_r = min(shard_cols, out.cols - r * shard_cols), and in.cols must be this rank's c_r.
//
// Every rank gets the same bits (NCCL's ring and tree algorithms reduce each element once and
// pass the result on), but not always the CPU group's: with more than 2 ranks a sum is not taken
// in rank order, and a BF16 sum rounds at each step (NCCL adds in BF16). With 2 ranks both match.
//
// NVLink multicast (NVLS) is never used: create_nccl_communicators turns it off, since it can
// take GPUs that others share out of service.
//
// Lifetime: ncclCommDestroy waits until every CUDA graph that captured a collective is destroyed,
// so destroy those graphs (CudaOps' decode graphs: the CudaOps) before the communicators, and use
// no communicator after its CudaOps is gone.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/communicator.h"
#include "core/expected.h"

namespace se::cuda {

class CudaOps;

// Communicator r belongs to ops[r]: its GPU and its stream. The GPUs must differ. Sets
// NCCL_NVLS_ENABLE=0 in the process's environment before NCCL starts (setenv: call this at
// start-up, before other threads read the environment). Fails when a GPU is given twice or NCCL
// cannot set the group up (the Status names the NCCL or CUDA call).
Expected<std::vector<std::unique_ptr<Communicator>>> create_nccl_communicators(
    std::span<CudaOps* const> ops);

}  // namespace se::cuda
