#include "engine/model_runner.h"

#include <algorithm>

namespace se {

Expected<StepLogits> ModelRunner::execute(const ScheduledStep& step) {
    token_ids_.clear();
    positions_.clear();
    logit_rows_.clear();
    StepLogits out;
    StepShape shape{.num_seqs = static_cast<int32_t>(step.seqs.size()), .decode = true};
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
        shape.max_kv_len = std::max(shape.max_kv_len, first + planned.num_new_tokens);
        shape.decode = shape.decode && planned.num_new_tokens == 1 && planned.samples;
        if (planned.samples) {
            logit_rows_.push_back(row - 1);
            out.seqs.push_back(seq);
        }
    }
    const int64_t vocab = model_.config().vocab_size;
    const auto num_rows = static_cast<int64_t>(logit_rows_.size());
    SE_RETURN_IF_ERROR(reserve(num_rows));
    const TensorView device_logits{DType::kF32, device_logits_.data(), num_rows, vocab};
    out.logits = TensorView{DType::kF32, host_logits_.data(), num_rows, vocab};

    SE_RETURN_IF_ERROR(controller_.begin_step(step.plan));
    shape.num_tokens = row;
    model_.forward({.token_ids = token_ids_,
                    .positions = positions_,
                    .logit_rows = logit_rows_,
                    .shape = shape},
                   controller_, device_logits);
    controller_.end_step();
    Ops& ops = model_.ops();
    if (ops.samples_on_device()) {
        // Only the raw rows that logprobs need come back; the rest stays on the backend.
        out.on_backend = true;
        const auto row_bytes = static_cast<size_t>(vocab) * sizeof(float);
        for (int64_t i = 0; i < num_rows; ++i) {
            if (!out.seqs[i]->wants_raw_logits()) continue;
            SE_RETURN_IF_ERROR(
                ops.copy_to_host(out.logits.f32_row(i), device_logits.f32_row(i), row_bytes));
        }
    } else if (device_logits.data != out.logits.data) {
        SE_RETURN_IF_ERROR(ops.copy_to_host(out.logits.data, device_logits.data,
                                            static_cast<size_t>(num_rows * vocab) * sizeof(float)));
    }
    return out;
}

Status ModelRunner::sample_on_backend(const StepLogits& out, std::vector<int32_t>& tokens) {
    SE_CHECK(out.on_backend);
    const auto num_rows = static_cast<int64_t>(out.seqs.size());
    edits_.clear();
    rows_.clear();
    for (int64_t i = 0; i < num_rows; ++i)
        rows_.push_back(out.seqs[i]->plan_sample(static_cast<int32_t>(i), edits_));
    tokens.resize(static_cast<size_t>(num_rows));
    const TensorView device_logits{DType::kF32, device_logits_.data(), num_rows,
                                   model_.config().vocab_size};
    return model_.ops().sample(device_logits, edits_, rows_, tokens);
}

Status ModelRunner::reserve(int64_t max_rows) {
    const auto bytes =
        static_cast<size_t>(std::max<int64_t>(max_rows, 1) * model_.config().vocab_size) *
        sizeof(float);
    if (device_logits_.size() >= bytes) return {};
    Ops& ops = model_.ops();
    SE_ASSIGN_OR_RETURN(device_logits_, ops.allocate(bytes));
    if (ops.host_memory()) {
        host_logits_ = device_logits_;
    } else {
        SE_ASSIGN_OR_RETURN(host_logits_, ops.allocate_host(bytes));
    }
    return {};
}

}  // namespace se
