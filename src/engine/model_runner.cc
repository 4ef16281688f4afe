#include "engine/model_runner.h"

namespace se {

Expected<StepLogits> ModelRunner::execute(const ScheduledStep& step) {
    token_ids_.clear();
    positions_.clear();
    logit_rows_.clear();
    StepLogits out;
    int32_t row = 0;
    for (size_t i = 0; i < step.seqs.size(); ++i) {
        Sequence* seq = step.seqs[i];
        const StepSeq& planned = step.plan.seqs[i];
        const int32_t first = seq->num_computed_tokens();
        for (int32_t t = first; t < first + planned.num_new_tokens; ++t) {
            token_ids_.push_back(seq->tokens()[t]);
            positions_.push_back(t);
        }
        row += planned.num_new_tokens;
        if (planned.samples) {
            logit_rows_.push_back(row - 1);
            out.seqs.push_back(seq);
        }
    }
    const int64_t vocab = model_.config().vocab_size;
    const auto num_rows = static_cast<int64_t>(logit_rows_.size());
    const size_t bytes = static_cast<size_t>(num_rows * vocab) * sizeof(float);
    if (logits_.size() < bytes) logits_ = HostBuffer(bytes);
    out.logits = TensorView{DType::kF32, logits_.data(), num_rows, vocab};

    SE_RETURN_IF_ERROR(controller_.begin_step(step.plan));
    model_.forward({.token_ids = token_ids_, .positions = positions_, .logit_rows = logit_rows_},
                   controller_, out.logits);
    controller_.end_step();
    return out;
}

}  // namespace se
