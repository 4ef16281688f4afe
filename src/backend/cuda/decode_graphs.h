// Decode steps as CUDA graphs, one per key (decode_graph_key.h): how CudaOps runs each step.
//
//   a key's 1st step   eager         its kernels launch as usual, and whatever is lazy (RoPE
//                                    tables, workspaces, the GEMM cache) happens now
//   its 2nd step       capture       the stream records the kernels, and ops fill the pinned
//                                    arena only; end_forward instantiates the graph
//   every later step   replay        ops only fill the pinned arena, at the capture's offsets;
//                                    end_forward checks that
//
// Either way end_forward hands back the graph, and the caller sends the staging in one copy
// (StepStaging::flush) before it launches it: the graph holds no copy node.
//
// Steps alternate between StepStaging's two pairs of arenas, and a graph's copies and kernels hold
// one pair's addresses, so the key names the pair (DecodeGraphKey::arena): each bucket is warmed,
// captured and replayed once per pair.
//
// A graph holds device addresses (weights, activations, KV, the staging and workspace arenas):
// CudaOps forgets every graph (invalidate) whenever memory is allocated or an arena moves.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>

#include "backend/cuda/cuda_graph.h"
#include "backend/cuda/decode_graph_key.h"
#include "backend/cuda/keyed_lru.h"
#include "backend/cuda/staging_trace.h"
#include "core/expected.h"

namespace se::cuda {

// Steps run each way since start-up: what tests check to know that graphs were used.
struct DecodeGraphStats {
    int64_t captures = 0;
    int64_t replays = 0;
};

enum class StepMode : uint8_t {
    kEager,    // ops launch their kernels
    kCapture,  // ops launch into the graph the stream is capturing
    kReplay,   // ops stage their inputs and launch nothing; end_forward launches the graph
};

struct DecodeGraphsOptions {
    int32_t max_model_len = 0;
    int32_t max_seqs = 0;
    size_t capacity = 128;  // graphs kept (each key twice: one per staging arena); the least
                            // recently replayed goes first
};

class DecodeGraphs {
  public:
    explicit DecodeGraphs(const DecodeGraphsOptions& options)
        : options_(options), graphs_(options.capacity) {}

    // Decides how a step of `shape` that stages into pair `arena` of the staging arenas runs
    // (each pair has its own graphs); on kCapture, `stream` is capturing when this returns.
    Status begin_step(const StepShape& shape, int32_t arena, cudaStream_t stream);

    StepMode mode() const { return mode_; }
    // The key of the step begun last, whatever its mode; nullopt when it is no decode step. Its
    // ops launch with the key's scalars even when eager, so that the eager step of a key runs
    // the kernels its graph will.
    const std::optional<DecodeGraphKey>& key() const { return key_; }

    // Ends the step begun last and returns the graph the caller launches (null for an eager
    // step): a capture is instantiated; a replay's `trace` (the staging it filled) must equal its
    // capture's. The graph stays valid until the next begin_step or invalidate.
    Expected<const CudaGraphExec*> end_forward(const StagingTrace& trace, cudaStream_t stream);

    // Forgets every graph and every eager step (between steps, or in an eager one).
    void invalidate();

    size_t num_graphs() const { return graphs_.size(); }
    const DecodeGraphStats& stats() const { return stats_; }

  private:
    struct Graph {
        CudaGraphExec exec;
        StagingTrace trace;  // the capture's
    };

    DecodeGraphsOptions options_;
    KeyedLru<DecodeGraphKey, Graph> graphs_;
    std::set<DecodeGraphKey> warmed_;  // keys that ran eagerly since the last invalidate
    StepMode mode_ = StepMode::kEager;
    std::optional<DecodeGraphKey> key_;
    DecodeGraphStats stats_;
};

}  // namespace se::cuda
