// CudaOps around the forward pass: the step's start and end (CUDA graphs of decode steps,
// decode_graphs.h) and sampling on the device (Ops::sample).
#include "backend/cuda/cuda_ops.h"

#include "backend/cuda/cuda_ops_args.h"
#include "backend/cuda/logit_edits.h"
#include "backend/cuda/sample_rows.h"

namespace se::cuda {

void CudaOps::begin_step(const StepShape& shape) {
    // The staging arena is about to be rewritten from the start: the previous step's copies out
    // of it must be done. A step that samples waited for its tokens already; a prefill chunk
    // that samples nothing did not wait for anything.
    must(stream_.synchronize());
    if (!graphs_) {
        staging_.begin_step(StagingSend::kQueue);
        return;
    }
    if (staging_.arena_version() != graphs_arena_version_) invalidate_graphs();
    must(graphs_->begin_step(shape, stream_.get()));
    staging_.begin_step(replaying() ? StagingSend::kHostOnly : StagingSend::kQueue);
}

void CudaOps::end_forward() {
    if (!graphs_) return;
    must(graphs_->end_forward(staging_.trace(), stream_.get()));
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
    SE_ASSIGN_OR_RETURN(const int32_t* device_tokens, enqueue_sampling(logits, edits, rows));
    return copy_to_host(tokens.data(), device_tokens, tokens.size_bytes());
}

Expected<const int32_t*> CudaOps::enqueue_sampling(const TensorView& logits,
                                                   std::span<const LogitEdit> edits,
                                                   std::span<const RowSampling> rows) {
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
    SE_ASSIGN_OR_RETURN(const RowSampling* device_rows, staging_.upload(rows, stream_.get()));
    SE_ASSIGN_OR_RETURN(
        const StepStaging::Slot out,
        staging_.reserve(rows.size_bytes() / sizeof(RowSampling) * sizeof(int32_t), stream_.get()));
    auto* device_tokens = static_cast<int32_t*>(out.device);
    SE_RETURN_IF_ERROR(sample_rows({.logits = logits.f32(),
                                    .rows = device_rows,
                                    .out = device_tokens,
                                    .row_stride = logits.cols,
                                    .num_rows = rows32(logits.rows),
                                    .vocab = vocab},
                                   stream_.get()));
    return device_tokens;
}

}  // namespace se::cuda
