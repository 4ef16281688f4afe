// Eval samples run as agent sessions, to measure what carrying state across turns (Chain Cache)
// and pruning old turns cost in accuracy. A sample's prompt (haystack, then question) arrives in
// `turns` nearly equal chunks:
//
//   turn t < T-1:  prompt = chunks 0..t, one token generated and discarded (the chunk after it is
//                  the "tool result" that comes next); then chunks older than N turns (as the
//                  next turn sees them) are pruned, keeping a share of them
//   turn T-1:      prompt = the whole prompt, the answer generated and scored
//
// On a method that evicts, every turn continues one chain (the state each turn compacted); on one
// that keeps the whole history, the prefix cache carries the turns and pruning works on it.
#pragma once

#include <string>
#include <vector>

#include "cli/eval_prompt_encoder.h"
#include "cli/eval_report.h"
#include "cli/prune_flags.h"
#include "engine/engine.h"
#include "eval/eval_sample.h"

namespace se::cli {

struct EvalTurns {
    int32_t turns = 1;
    PruneFlags prune;
};

// Flag errors name the flag.
Status check_eval_turns(const EvalTurns& turns);

// Runs the samples one session at a time (greedy).
Expected<EvalTaskResult> run_task_in_turns(Engine& engine, const ChatPromptEncoder& encoder,
                                           std::vector<eval::EvalSample> samples,
                                           const EvalTurns& turns);

}  // namespace se::cli
