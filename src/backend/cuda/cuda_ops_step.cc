// CudaOps around the forward pass: the step's start and end (CUDA graphs of decode steps,
// decode_graphs.h) and sampling on the device (Ops::sample).
#include "backend/cuda/cuda_ops.h"

#include <fmt/core.h>

#include <cstring>

#include "backend/cuda/cuda_ops_args.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/logit_edits.h"
#include "backend/cuda/sample_rows.h"

namespace se::cuda {

void CudaOps::begin_step(const StepShape& shape) {
    // The staging takes the other pair of arenas, once the step before last is done with them
    // (step_staging.h): the previous step may still run, as an overlapped decode step needs.
    must(staging_.begin_step(StagingSend::kQueue, stream_.get()));
    if (!graphs_) return;
    if (staging_.arena_version() != graphs_arena_version_) invalidate_graphs();
    must(graphs_->begin_step(shape, staging_.arena(), stream_.get()));
    // A graph step (captured or replayed) stages host-only and sends it all before its launch.
    staging_.set_send(graphs_->mode() == StepMode::kEager ? StagingSend::kQueue
                                                          : StagingSend::kHostOnly);
}

void CudaOps::end_forward() {
    if (!graphs_) return;
    const CudaGraphExec* graph = must(graphs_->end_forward(staging_.trace(), stream_.get()));
    if (graph != nullptr) {
        must(staging_.flush(stream_.get()));
        must(graph->launch(stream_.get()));
    }
    staging_.set_send(StagingSend::kQueue);
}

void CudaOps::check_eager(const char* what) const {
    SE_CHECK(!graphs_ || graphs_->mode() == StepMode::kEager,
             "cuda backend: %s inside a decode step captured or replayed as a CUDA graph", what);
}

void CudaOps::invalidate_graphs() {
    if (!graphs_) return;
    graphs_->invalidate();
    graphs_arena_version_ = staging_.arena_version();
}

Status CudaOps::sample(const TensorView& logits, std::span<const LogitEdit> edits,
                       std::span<const RowSampling> rows, std::span<int32_t> tokens) {
    SE_CHECK(logits.dtype == DType::kF32 && logits.rows == static_cast<int64_t>(rows.size()) &&
             tokens.size() == rows.size());
    if (rows.empty()) return {};
    SE_ASSIGN_OR_RETURN(const int32_t* device_tokens,
                        enqueue_sampling(logits, edits, rows, nullptr));
    return copy_to_host(tokens.data(), device_tokens, tokens.size_bytes());
}

Status CudaOps::sample_async(const TensorView& logits, std::span<const LogitEdit> edits,
                             std::span<const RowSampling> rows) {
    check_eager("sample_async");
    SE_CHECK(logits.dtype == DType::kF32 && logits.rows == static_cast<int64_t>(rows.size()));
    SampledCopy& copy = sampled_copies_[next_copy_];
    SE_CHECK(copy.rows < 0, "sample_async: two samplings are queued and not taken");
    if (!rows.empty()) {
        auto* host_out = static_cast<int32_t*>(copy.host.data());
        SE_ASSIGN_OR_RETURN(const int32_t* device_tokens,
                            enqueue_sampling(logits, edits, rows, host_out));
        static_cast<void>(device_tokens);  // the next step's embedding reads them (fed ids)
    }
    SE_RETURN_IF_ERROR(copy.done.record(stream_.get()));
    copy.rows = static_cast<int32_t>(rows.size());
    next_copy_ ^= 1;
    return {};
}

Status CudaOps::sampled_tokens(std::span<int32_t> tokens) {
    // The older of the two copies: the one sample_async does not queue next, unless that one is
    // the only one outstanding.
    SampledCopy* copy = &sampled_copies_[next_copy_ ^ 1];
    if (sampled_copies_[next_copy_].rows >= 0) copy = &sampled_copies_[next_copy_];
    SE_CHECK(copy->rows >= 0, "sampled_tokens: no sampling is queued");
    SE_CHECK(static_cast<size_t>(copy->rows) == tokens.size(),
             "sampled_tokens: %zu tokens asked of a sampling of %d rows", tokens.size(),
             copy->rows);
    SE_RETURN_IF_ERROR(copy->done.synchronize());
    std::memcpy(tokens.data(), copy->host.data(), tokens.size_bytes());
    copy->rows = -1;
    if (times_) SE_RETURN_IF_ERROR(times_->collect());
    return {};
}

Expected<const int32_t*> CudaOps::enqueue_sampling(const TensorView& logits,
                                                   std::span<const LogitEdit> edits,
                                                   std::span<const RowSampling> rows,
                                                   int32_t* host_out) {
    const Timed timed(*this, "sample");
    const auto vocab = static_cast<int32_t>(logits.cols);
    if (!edits.empty()) {
        SE_ASSIGN_OR_RETURN(const LogitEdit* device_edits, staging_.upload(edits, stream_.get()));
        SE_RETURN_IF_ERROR(
            apply_logit_edits({.logits = logits.f32(),
                               .edits = device_edits,
                               .row_stride = logits.cols,
                               .num_rows = rows32(logits.rows),
                               .vocab = vocab,
                               .num_edits = rows32(static_cast<int64_t>(edits.size()))},
                              stream_.get()));
    }
    // One thread of each CTA reads its row's parameters: read in place, not copied.
    SE_ASSIGN_OR_RETURN(const RowSampling* host_rows, staging_.host_copy(rows, stream_.get()));
    if (rows.size_bytes() / sizeof(RowSampling) * sizeof(int32_t) > sampled_.size_bytes()) {
        return out_of_range(fmt::format("sample: {} rows, more than the {} sequences of a step",
                                        rows.size(), options_.max_seqs));
    }
    auto* device_tokens = static_cast<int32_t*>(sampled_.data());
    SE_RETURN_IF_ERROR(sample_rows({.logits = logits.f32(),
                                    .rows = host_rows,
                                    .out = device_tokens,
                                    .host_out = host_out,
                                    .row_stride = logits.cols,
                                    .num_rows = rows32(logits.rows),
                                    .vocab = vocab},
                                   stream_.get()));
    return device_tokens;
}

}  // namespace se::cuda
