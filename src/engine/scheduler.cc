#include "engine/scheduler.h"

#include <algorithm>

namespace se {

void Scheduler::add(Sequence* seq) {
    waiting_.push_back(seq);
}

void Scheduler::remove(Sequence* seq) {
    std::erase(waiting_, seq);
    std::erase(running_, seq);
}

Sequence* Scheduler::newest_running() const {
    return running_.empty() ? nullptr : running_.back();
}

std::optional<ScheduledStep> Scheduler::schedule() {
    const bool decode_ready = std::any_of(running_.begin(), running_.end(),
                                          [](const Sequence* s) { return s->prompt_done(); });
    // Alternate when both kinds of work exist, so neither side waits more than one step.
    if (decode_ready && last_was_prefill_) {
        last_was_prefill_ = false;
        return schedule_decode();
    }
    if (auto step = schedule_prefill()) {
        last_was_prefill_ = true;
        return step;
    }
    last_was_prefill_ = false;
    return decode_ready ? schedule_decode() : std::nullopt;
}

std::optional<ScheduledStep> Scheduler::schedule_prefill() {
    ScheduledStep step;
    step.plan.phase = StepPhase::kPrefill;
    int32_t budget = config_.max_num_batched_tokens;
    auto take = [&](Sequence* seq) {
        const int32_t count =
            std::min({seq->num_pending_tokens(), config_.prefill_chunk_size, budget});
        if (count <= 0) return false;
        step.plan.seqs.push_back(
            {.seq_id = seq->seq_id(),
             .num_new_tokens = count,
             .num_computed_tokens = seq->num_computed_tokens(),
             .completes_prompt = seq->num_computed_tokens() + count >= seq->num_prompt_tokens()});
        step.seqs.push_back(seq);
        budget -= count;
        return true;
    };
    // Chunked prompts already running continue first, then new admissions in arrival order.
    for (Sequence* seq : running_) {
        if (!seq->prompt_done() && budget > 0) take(seq);
    }
    while (!waiting_.empty() && budget > 0 &&
           static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
        Sequence* seq = waiting_.front();
        if (!take(seq)) break;
        waiting_.pop_front();
        seq->set_status(SeqStatus::kRunning);
        running_.push_back(seq);
    }
    if (step.seqs.empty()) return std::nullopt;
    return step;
}

std::optional<ScheduledStep> Scheduler::schedule_decode() {
    ScheduledStep step;
    step.plan.phase = StepPhase::kDecode;
    for (Sequence* seq : running_) {
        if (!seq->prompt_done()) continue;
        step.plan.seqs.push_back({.seq_id = seq->seq_id(),
                                  .num_new_tokens = 1,
                                  .num_computed_tokens = seq->num_computed_tokens(),
                                  .completes_prompt = false});
        step.seqs.push_back(seq);
    }
    if (step.seqs.empty()) return std::nullopt;
    return step;
}

}  // namespace se
