// The samples of one task for one run: sample i of task t under seed s is always the same
// prompt, sized to the requested context length with the caller's token counter.
#pragma once

#include <cstdint>
#include <vector>

#include "core/expected.h"
#include "eval/eval_sample.h"
#include "eval/prompt_token_counter.h"
#include "eval/task_registry.h"

namespace se::eval {

struct SampleOptions {
    uint64_t seed = 0;
    int32_t num_samples = 1;
    int32_t context_len = 2048;  // target prompt length in tokens (the prompt stays at or under)
};

Expected<std::vector<EvalSample>> make_samples(const EvalTask& task, const SampleOptions& options,
                                               const PromptTokenCounter& counter);

}  // namespace se::eval
