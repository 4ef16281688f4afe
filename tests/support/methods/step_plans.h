// Test-only: the step plans tests hand a driver, sequence i of a list being sequence id i + 1.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sparse/step_plan.h"

namespace se::testing {

// Prefill plans: every prompt in chunks of `chunk` tokens, all prompts in each step.
inline std::vector<StepPlan> prefill_plans(const std::vector<int32_t>& prompts, int32_t chunk) {
    std::vector<StepPlan> plans;
    std::vector<int32_t> done(prompts.size(), 0);
    for (bool more = true; more;) {
        StepPlan plan{.phase = StepPhase::kPrefill, .seqs = {}};
        for (size_t i = 0; i < prompts.size(); ++i) {
            const int32_t n = std::min(chunk, prompts[i] - done[i]);
            if (n <= 0) continue;
            plan.seqs.push_back({.seq_id = static_cast<SeqId>(i + 1),
                                 .num_new_tokens = n,
                                 .num_computed_tokens = done[i],
                                 .samples = done[i] + n == prompts[i]});
            done[i] += n;
        }
        more = !plan.seqs.empty();
        if (more) plans.push_back(std::move(plan));
    }
    return plans;
}

// One decode step of every sequence, sequence i at position lens[i].
inline StepPlan decode_plan(const std::vector<int32_t>& lens) {
    StepPlan plan{.phase = StepPhase::kDecode, .seqs = {}};
    for (size_t i = 0; i < lens.size(); ++i) {
        plan.seqs.push_back({.seq_id = static_cast<SeqId>(i + 1),
                             .num_new_tokens = 1,
                             .num_computed_tokens = lens[i],
                             .samples = true});
    }
    return plan;
}

// Prefill plans in chunks of `chunk`, then `decode_steps` decode steps of every sequence.
inline std::vector<StepPlan> prefill_then_decode(const std::vector<int32_t>& prompts, int32_t chunk,
                                                 int32_t decode_steps) {
    std::vector<StepPlan> plans = prefill_plans(prompts, chunk);
    std::vector<int32_t> lens = prompts;
    for (int32_t step = 0; step < decode_steps; ++step) {
        plans.push_back(decode_plan(lens));
        for (int32_t& l : lens) ++l;
    }
    return plans;
}

}  // namespace se::testing
