// What a backend may know of a forward pass before its first op (Ops::begin_step): enough to
// decide how to run the step. The CUDA backend replays decode steps as graphs keyed by these sizes.
#pragma once

#include <cstdint>

namespace se {

struct StepShape {
    int32_t num_tokens = 0;
    int32_t num_seqs = 0;
    int32_t max_kv_len = 0;  // the longest sequence's KV entries once the step has run
    // Every sequence adds one token and samples it (logit row i is token i of sequence i): a
    // decode step. False (the default) promises nothing.
    bool decode = false;
};

}  // namespace se
