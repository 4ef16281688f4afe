// Chooses what each engine step runs: prompt chunks (prefill) or one token for every running
// sequence (decode), never both in one step. FCFS admission within max_num_seqs and
// max_num_batched_tokens; long prompts are split into chunks of at most prefill_chunk_size.
// When both kinds of work wait, steps alternate so neither starves.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "engine/sequence.h"
#include "sparse/step_plan.h"

namespace se {

struct SchedulerConfig {
    int32_t max_num_seqs = 256;
    int32_t max_num_batched_tokens = 8192;
    int32_t prefill_chunk_size = 2048;
};

struct ScheduledStep {
    StepPlan plan;
    std::vector<Sequence*> seqs;  // in plan order
};

class Scheduler {
  public:
    explicit Scheduler(SchedulerConfig config) : config_(config) {}

    void add(Sequence* seq);
    // Drops a sequence from the queues (finished or aborted).
    void remove(Sequence* seq);

    std::optional<ScheduledStep> schedule();

    bool has_work() const { return !waiting_.empty() || !running_.empty(); }
    int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
    int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
    // The most recently admitted running sequence (the first to give way when memory is short).
    Sequence* newest_running() const;

  private:
    std::optional<ScheduledStep> schedule_prefill();
    std::optional<ScheduledStep> schedule_decode();

    SchedulerConfig config_;
    std::deque<Sequence*> waiting_;
    std::vector<Sequence*> running_;  // admission order
    bool last_was_prefill_ = false;
};

}  // namespace se
