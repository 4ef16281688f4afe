#include "engine/scheduler.h"

#include <algorithm>

namespace se {
namespace {

bool contains(const std::vector<Sequence*>& seqs, const Sequence* seq) {
    return std::find(seqs.begin(), seqs.end(), seq) != seqs.end();
}

}  // namespace

void Scheduler::remove(Sequence* seq) {
    std::erase(waiting_, seq);
    std::erase(running_, seq);
}

std::optional<ScheduledStep> Scheduler::plan() const {
    const bool decode_ready = std::any_of(running_.begin(), running_.end(),
                                          [](const Sequence* s) { return s->is_decoding(); });
    // Alternate when both kinds of work exist, so neither side waits more than one step.
    if (decode_ready && last_was_prefill_) {
        if (auto step = plan_decode()) return step;
    }
    if (auto step = plan_prefill()) return step;
    return decode_ready ? plan_decode() : std::nullopt;
}

void Scheduler::add_to_plan(Sequence* seq, int32_t count, ScheduledStep& step) const {
    step.plan.seqs.push_back({.seq_id = seq->seq_id(),
                              .num_new_tokens = count,
                              .num_computed_tokens = seq->num_computed_tokens(),
                              .samples = seq->num_computed_tokens() + count == seq->num_tokens()});
    step.seqs.push_back(seq);
}

bool Scheduler::make_room(int64_t need, const Sequence* requester, Budget& budget,
                          ScheduledStep& step) const {
    // Only sequences admitted after the requester give way to it; if they cannot make enough
    // room, none of them does.
    const size_t num_before = step.preempted.size();
    const int64_t blocks_before = budget.blocks;
    for (auto it = running_.rbegin(); need > budget.blocks && *it != requester; ++it) {
        if (contains(step.preempted, *it)) continue;
        step.preempted.push_back(*it);
        budget.blocks += oracle_.release_gain((*it)->seq_id());
    }
    if (need <= budget.blocks) return true;
    step.preempted.resize(num_before);
    budget.blocks = blocks_before;
    return false;
}

AdmissionCost Scheduler::admission_cost(const Sequence& seq, int32_t max_chunk) const {
    if (!seq.resumes_state()) return oracle_.admission_cost(query_(seq), max_chunk);
    const int32_t chunk = std::min(seq.num_pending_tokens(), max_chunk);
    return {.hit_tokens = seq.num_computed_tokens(),
            .first_chunk = chunk,
            .blocks = oracle_.step_cost(seq.seq_id(), chunk)};
}

std::optional<ScheduledStep> Scheduler::plan_prefill() const {
    ScheduledStep step;
    step.plan.phase = StepPhase::kPrefill;
    Budget budget{.blocks = oracle_.available_blocks(), .tokens = config_.max_num_batched_tokens};
    // Sequences already running whose KV is incomplete (chunked prompts) continue first, oldest
    // first; to continue, one may preempt sequences admitted after it.
    for (Sequence* seq : running_) {
        if (seq->is_decoding() || contains(step.preempted, seq) || budget.tokens <= 0) continue;
        const int32_t count =
            std::min({seq->num_pending_tokens(), config_.prefill_chunk_size, budget.tokens});
        const int64_t cost = oracle_.step_cost(seq->seq_id(), count);
        if (!make_room(cost, seq, budget, step)) break;
        budget.blocks -= cost;
        step.blocks += cost;
        budget.tokens -= count;
        add_to_plan(seq, count, step);
    }
    // Then new admissions in arrival order while they fit; the first that does not fit blocks
    // the ones behind it (FCFS).
    auto num_running = static_cast<int32_t>(running_.size() - step.preempted.size());
    for (Sequence* seq : waiting_) {
        if (num_running >= config_.max_num_seqs || budget.tokens <= 0) break;
        const int32_t max_chunk = std::min(config_.prefill_chunk_size, budget.tokens);
        const AdmissionCost cost = admission_cost(*seq, max_chunk);
        if (cost.blocks > budget.blocks || cost.first_chunk <= 0) break;
        budget.blocks -= cost.blocks;
        budget.tokens -= cost.first_chunk;
        step.blocks += cost.blocks;
        step.admitted.push_back(
            {.seq = seq, .hit_tokens = cost.hit_tokens, .resumed = seq->resumes_state()});
        step.plan.seqs.push_back(
            {.seq_id = seq->seq_id(),
             .num_new_tokens = cost.first_chunk,
             .num_computed_tokens = cost.hit_tokens,
             .samples = cost.hit_tokens + cost.first_chunk == seq->num_tokens()});
        step.seqs.push_back(seq);
        ++num_running;
    }
    if (step.seqs.empty() && step.preempted.empty()) return std::nullopt;
    return step;
}

std::optional<ScheduledStep> Scheduler::plan_decode() const {
    ScheduledStep step;
    step.plan.phase = StepPhase::kDecode;
    Budget budget{.blocks = oracle_.available_blocks(), .tokens = config_.max_num_batched_tokens};
    std::vector<Sequence*> rows;
    int64_t need = 0;
    for (Sequence* seq : running_) {
        if (!seq->is_decoding() || budget.tokens <= 0) continue;
        rows.push_back(seq);
        need += oracle_.step_cost(seq->seq_id(), 1);
        --budget.tokens;
    }
    if (rows.empty()) return std::nullopt;
    // Out of blocks: preempt the newest running sequences, but keep at least the oldest row
    // (every request fits alone: add_request checked that).
    for (auto it = running_.rbegin(); need > budget.blocks && it != running_.rend(); ++it) {
        Sequence* victim = *it;
        if (rows.size() == 1 && rows.front() == victim) break;
        step.preempted.push_back(victim);
        budget.blocks += oracle_.release_gain(victim->seq_id());
        if (contains(rows, victim)) {
            need -= oracle_.step_cost(victim->seq_id(), 1);
            std::erase(rows, victim);
        }
    }
    for (Sequence* seq : rows) add_to_plan(seq, 1, step);
    step.blocks = need;
    return step;
}

void Scheduler::commit(const ScheduledStep& step) {
    // Preempted sequences return to the front of the queue, oldest first.
    for (Sequence* seq : step.preempted) {
        std::erase(running_, seq);
        waiting_.push_front(seq);
    }
    for (const Admission& a : step.admitted) {
        std::erase(waiting_, a.seq);
        running_.push_back(a.seq);
    }
    last_was_prefill_ = step.plan.phase == StepPhase::kPrefill;
}

}  // namespace se
