#include "engine/model_runner.h"

#include <algorithm>

#include "backend/sampling_rows.h"

namespace se {

Expected<StepLogits> ModelRunner::execute(const ScheduledStep& step,
                                          std::span<const int32_t> fed_rows) {
    SE_CHECK(fed_rows.empty() || fed_rows.size() == step.seqs.size());
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
        if (!fed_rows.empty() && fed_rows[i] >= 0) {
            SE_CHECK(planned.num_new_tokens == 1 && seq->has_pending_token());
            token_ids_.back() = fed_token_id(fed_rows[i]);
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

    shape.num_tokens = row;
    const ForwardBatch batch{.token_ids = token_ids_,
                             .positions = positions_,
                             .logit_rows = logit_rows_,
                             .shape = shape};
    if (threads_ != nullptr) {
        SE_RETURN_IF_ERROR(begin_step_all(step.plan));
        forward_all(batch, device_logits);
    } else {
        SE_RETURN_IF_ERROR(controller_.begin_step(step.plan));
        model_.forward(batch, controller_, device_logits);
        controller_.end_step();
    }
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

ModelRunner::ModelRunner(std::vector<RankModel> ranks, RankThreads& threads)
    : model_(*ranks.at(0).model),
      controller_(*ranks.at(0).controller),
      ranks_(std::move(ranks)),
      threads_(&threads),
      rank_logits_(ranks_.size()),
      rank_status_(ranks_.size()) {
    SE_CHECK(static_cast<int32_t>(ranks_.size()) == threads.size());
}

Status ModelRunner::begin_step_all(const StepPlan& plan) {
    threads_->run([&](int32_t r) {
        const RankModel& rank = ranks_[static_cast<size_t>(r)];
        rank.model->ops().bind_thread();
        rank_status_[static_cast<size_t>(r)] = rank.controller->begin_step(plan);
    });
    const bool ok = rank_status_.front().ok();
    for (size_t r = 1; r < ranks_.size(); ++r) {
        SE_CHECK(rank_status_[r].ok() == ok,
                 "tensor-parallel ranks diverged: rank %zu %s the step's KV room, rank 0 %s", r,
                 rank_status_[r].ok() ? "reserved" : "could not reserve",
                 ok ? "reserved it" : "could not");
    }
    return rank_status_.front();
}

void ModelRunner::forward_all(const ForwardBatch& batch, const TensorView& logits) {
    threads_->run([&](int32_t r) {
        const RankModel& rank = ranks_[static_cast<size_t>(r)];
        rank.model->ops().bind_thread();
        // Every rank gets the whole logits (the gather's result); rank 0's are the ones sampled.
        TensorView out = logits;
        if (r > 0) out.data = rank_logits_[static_cast<size_t>(r)].data();
        rank.model->forward(batch, *rank.controller, out);
        rank.controller->end_step();
    });
}

TensorView ModelRunner::plan_samples(const StepLogits& out) {
    SE_CHECK(out.on_backend);
    const auto num_rows = static_cast<int64_t>(out.seqs.size());
    edits_.clear();
    rows_.clear();
    for (int64_t i = 0; i < num_rows; ++i)
        rows_.push_back(out.seqs[i]->plan_sample(static_cast<int32_t>(i), edits_));
    return TensorView{DType::kF32, device_logits_.data(), num_rows, model_.config().vocab_size};
}

Status ModelRunner::sample_on_backend(const StepLogits& out, std::vector<int32_t>& tokens) {
    const TensorView device_logits = plan_samples(out);
    tokens.resize(out.seqs.size());
    return model_.ops().sample(device_logits, edits_, rows_, tokens);
}

Status ModelRunner::queue_sample(const StepLogits& out) {
    const TensorView device_logits = plan_samples(out);
    return model_.ops().sample_async(device_logits, edits_, rows_);
}

Status ModelRunner::take_sampled(std::vector<int32_t>& tokens, size_t num_rows) {
    tokens.resize(num_rows);
    return model_.ops().sampled_tokens(tokens);
}

Status ModelRunner::reserve(int64_t max_rows) {
    const auto bytes =
        static_cast<size_t>(std::max<int64_t>(max_rows, 1) * model_.config().vocab_size) *
        sizeof(float);
    if (device_logits_.size() >= bytes) return {};
    if (threads_ != nullptr) {
        // Each rank's logits live in its own memory, allocated on its thread (its device).
        threads_->run([&](int32_t r) {
            if (r == 0) return;
            Ops& rank_ops = ranks_[static_cast<size_t>(r)].model->ops();
            rank_ops.bind_thread();
            auto buffer = rank_ops.allocate(bytes);
            if (buffer.ok()) {
                rank_logits_[static_cast<size_t>(r)] = std::move(buffer).value();
                rank_status_[static_cast<size_t>(r)] = Status();
            } else {
                rank_status_[static_cast<size_t>(r)] = buffer.status();
            }
        });
        for (size_t r = 1; r < ranks_.size(); ++r) SE_RETURN_IF_ERROR(rank_status_[r]);
    }
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
