// Chooses what each engine step runs: prompt chunks (prefill) or one token for every decoding
// sequence (decode), never both in one step. FCFS admission within max_num_seqs,
// max_num_batched_tokens and what the method's MemoryOracle says is available; prompts longer
// than prefill_chunk_size are split. When both kinds of work wait, steps alternate, so neither
// waits more than one step. When a step cannot get its blocks, the newest running sequences are
// preempted (their KV is released and recomputed later); a new request never displaces one.
//
// A waiting sequence that already has computed KV (a resumed chain: Sequence::resumes_state) is
// admitted at the cost of its next chunk alone, as its state is already held.
//
// plan() is pure: it only reads queues and asks the oracle. commit() applies the queue moves of a
// plan the engine has carried out.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "engine/sequence.h"
#include "sparse/memory_oracle.h"
#include "sparse/step_plan.h"

namespace se {

struct SchedulerConfig {
    int32_t max_num_seqs = 256;
    int32_t max_num_batched_tokens = 8192;
    int32_t prefill_chunk_size = 2048;
};

struct Admission {
    Sequence* seq = nullptr;
    int32_t hit_tokens = 0;  // cached prefix the sequence starts from
    bool resumed = false;    // it continues state the cache manager holds (a resumed chain)
};

struct ScheduledStep {
    StepPlan plan;
    std::vector<Sequence*> seqs;       // in plan order
    std::vector<Sequence*> preempted;  // newest first: release their KV before the step
    std::vector<Admission> admitted;   // attach their cached prefix before the step
    int64_t blocks = 0;                // blocks the step takes from the oracle's available ones
};

class Scheduler {
  public:
    // `query` gives a sequence's prefix-cache question (its namespace and tokens).
    using PrefixQueryFn = std::function<PrefixQuery(const Sequence&)>;

    Scheduler(SchedulerConfig config, const MemoryOracle& oracle, PrefixQueryFn query)
        : config_(config), oracle_(oracle), query_(std::move(query)) {}

    void add(Sequence* seq) { waiting_.push_back(seq); }
    // Drops a sequence from the queues (finished or aborted).
    void remove(Sequence* seq);

    std::optional<ScheduledStep> plan() const;
    void commit(const ScheduledStep& step);

    bool has_work() const { return !waiting_.empty() || !running_.empty(); }
    int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
    int32_t num_running() const { return static_cast<int32_t>(running_.size()); }

  private:
    struct Budget {
        int64_t blocks = 0;
        int32_t tokens = 0;
    };
    AdmissionCost admission_cost(const Sequence& seq, int32_t max_chunk) const;
    std::optional<ScheduledStep> plan_prefill() const;
    std::optional<ScheduledStep> plan_decode() const;
    // Preempts running sequences newer than `requester`, newest first, until `need` blocks fit
    // in budget.blocks; false when they do not.
    bool make_room(int64_t need, const Sequence* requester, Budget& budget,
                   ScheduledStep& step) const;
    void add_to_plan(Sequence* seq, int32_t count, ScheduledStep& step) const;

    SchedulerConfig config_;
    const MemoryOracle& oracle_;
    PrefixQueryFn query_;
    std::deque<Sequence*> waiting_;   // arrival order; preempted sequences go back to the front
    std::vector<Sequence*> running_;  // admission order (newest last)
    bool last_was_prefill_ = false;
};

}  // namespace se
