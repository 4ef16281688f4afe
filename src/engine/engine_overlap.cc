// Overlapped decode steps (engine.h): step N + 1 is queued on the backend before the host takes
// step N's tokens, so that the host's work between two decode steps (taking and streaming the
// tokens, stop checks, planning, staging the next step's inputs) runs while the device computes.
#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/engine.h"

namespace se {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

bool Engine::can_overlap(const ScheduledStep& step, const StepLogits& out) const {
    if (!config_.async_scheduling || tp_size() != 1 || !out.on_backend || !ops_->overlaps_steps() ||
        !method_.runtime->overlaps_steps() || step.plan.phase != StepPhase::kDecode ||
        out.seqs.size() != step.seqs.size()) {
        return false;
    }
    return std::all_of(out.seqs.begin(), out.seqs.end(),
                       [](const Sequence* seq) { return seq->can_overlap(); });
}

bool Engine::queue_overlapped_step() {
    const std::vector<Sequence*>& prev = in_flight_->seqs;
    // Only the same requests decoding again: a waiting request is admitted (and prefilled) by a
    // plain step, which needs every token on the host first.
    if (scheduler_->num_waiting() > 0 ||
        static_cast<size_t>(scheduler_->num_running()) != prev.size() ||
        std::any_of(prev.begin(), prev.end(), [](const Sequence* seq) { return seq == nullptr; })) {
        return false;
    }
    // A request whose next token ends it by length gets no step after it. The others keep
    // their order, and each reads its token from its row of the previous step's draw.
    std::vector<Sequence*> next;
    std::vector<int32_t> fed_rows;
    for (size_t row = 0; row < prev.size(); ++row) {
        if (prev[row]->ends_at_next_token()) continue;
        prev[row]->push_pending_token();
        next.push_back(prev[row]);
        fed_rows.push_back(static_cast<int32_t>(row));
    }
    const auto undo = [&next] {
        for (Sequence* seq : next) seq->drop_pending_token();
    };
    std::optional<ScheduledStep> step;
    if (!next.empty()) step = scheduler_->plan();
    if (!step || step->plan.phase != StepPhase::kDecode || !step->preempted.empty() ||
        !step->admitted.empty() || step->seqs != next) {
        undo();  // out of KV room, or nothing left to decode: a plain step decides
        return false;
    }
    apply_queue_moves(*step);  // step->seqs == next: fed_rows are its rows' sources
    const auto start = Clock::now();
    Expected<StepLogits> result = runner_->execute(*step, fed_rows);
    if (!result.ok()) {
        undo();  // a plain step finds the same shortage and recovers from it
        return false;
    }
    record_forward(*step, std::chrono::duration<double>(Clock::now() - start).count());
    ++stats_.overlapped_steps;
    StepLogits& out = result.value();
    const Status queued = runner_->queue_sample(out);
    SE_CHECK(queued.ok(), "sampling on the %s backend: %s", device_name().data(),
             queued.to_string().c_str());
    const std::vector<Sequence*> taken = std::exchange(in_flight_->seqs, out.seqs);
    take_tokens(taken);
    refresh_gauges();
    return true;
}

void Engine::drain_in_flight() {
    if (!in_flight_) return;
    const std::vector<Sequence*> seqs = std::move(in_flight_->seqs);
    in_flight_.reset();
    take_tokens(seqs);
    refresh_gauges();
}

void Engine::take_tokens(std::span<Sequence* const> seqs) {
    const auto start = Clock::now();
    const Status taken = runner_->take_sampled(sampled_tokens_, seqs.size());
    stats_.backend_sample_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    SE_CHECK(taken.ok(), "sampling on the %s backend: %s", device_name().data(),
             taken.to_string().c_str());
    // The step queued after these tokens (if any) holds a subsequence of `seqs` in their order
    // (queue_overlapped_step): one walk finds each request's row there before finish() forgets
    // the request.
    std::vector<Sequence*>* queued = in_flight_ ? &in_flight_->seqs : nullptr;
    size_t next_row = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
        Sequence* seq = seqs[i];
        if (seq == nullptr) continue;
        Sequence** row = nullptr;
        if (queued != nullptr && next_row < queued->size() && (*queued)[next_row] == seq) {
            row = &(*queued)[next_row++];
        }
        const bool done = append_token(*seq, sampled_tokens_[i], {}, /*on_backend=*/true);
        if (done && row != nullptr) *row = nullptr;
    }
    SE_CHECK(queued == nullptr || next_row == queued->size(),
             "overlapped steps: %zu of the queued step's %zu requests were not in the step "
             "before it",
             queued == nullptr ? size_t{0} : queued->size() - next_row,
             queued == nullptr ? size_t{0} : queued->size());
    // A queued step whose every request has ended computes nothing anyone reads.
    if (in_flight_ && std::all_of(in_flight_->seqs.begin(), in_flight_->seqs.end(),
                                  [](const Sequence* seq) { return seq == nullptr; })) {
        drain_in_flight();
    }
}

}  // namespace se
