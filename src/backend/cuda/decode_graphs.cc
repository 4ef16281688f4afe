#include "backend/cuda/decode_graphs.h"

#include <string>
#include <utility>

namespace se::cuda {

Status DecodeGraphs::begin_step(const StepShape& shape, int32_t arena, cudaStream_t stream) {
    SE_CHECK(mode_ == StepMode::kEager, "decode graphs: begin_step without end_forward");
    key_ = decode_graph_key(shape, options_.max_model_len, options_.max_seqs);
    if (!key_) return {};
    key_->arena = arena;
    if (graphs_.find(*key_) != nullptr) {
        mode_ = StepMode::kReplay;
    } else if (warmed_.contains(*key_)) {
        SE_RETURN_IF_ERROR(CudaGraphExec::begin_capture(stream));
        mode_ = StepMode::kCapture;
    } else {
        warmed_.insert(*key_);
    }
    return {};
}

Expected<const CudaGraphExec*> DecodeGraphs::end_forward(const StagingTrace& trace,
                                                         cudaStream_t stream) {
    const StepMode mode = std::exchange(mode_, StepMode::kEager);
    switch (mode) {
        case StepMode::kEager:
            return nullptr;
        case StepMode::kCapture: {
            SE_ASSIGN_OR_RETURN(CudaGraphExec exec, CudaGraphExec::end_capture(stream));
            const Graph& graph =
                graphs_.insert(*key_, Graph{.exec = std::move(exec), .trace = trace});
            ++stats_.captures;
            return &graph.exec;
        }
        case StepMode::kReplay: {
            const Graph* graph = graphs_.find(*key_);
            SE_CHECK(graph != nullptr);
            const std::string diff = trace.first_difference(graph->trace);
            SE_CHECK(diff.empty(),
                     "decode graph of %d tokens, KV bucket %d: the replay staged its inputs "
                     "unlike the capture (%s)",
                     key_->num_tokens, key_->kv_bucket, diff.c_str());
            ++stats_.replays;
            return &graph->exec;
        }
    }
    return nullptr;
}

void DecodeGraphs::invalidate() {
    SE_CHECK(mode_ == StepMode::kEager, "decode graphs: invalidated inside a graph step");
    graphs_.clear();
    warmed_.clear();
}

}  // namespace se::cuda
