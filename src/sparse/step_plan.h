// What one engine step does to the attention state, as the scheduler planned it.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/paged_kv_store.h"

namespace se {

enum class StepPhase : uint8_t {
    kPrefill,  // prompt chunks: each sequence adds one or more tokens
    kDecode,   // one new token per sequence
};

struct StepSeq {
    SeqId seq_id = 0;
    int32_t num_new_tokens = 0;  // tokens this step adds to the sequence
    // Tokens of the sequence already processed before this step (its logical length).
    int32_t num_computed_tokens = 0;
    // The step reaches the sequence's last token, whose logits are sampled (the final prefill
    // chunk, or any decode step).
    bool samples = false;
};

struct StepPlan {
    StepPhase phase = StepPhase::kPrefill;
    std::vector<StepSeq> seqs;  // the step's token rows are the seqs' new tokens, in this order

    int32_t num_tokens() const {
        int32_t n = 0;
        for (const StepSeq& s : seqs) n += s.num_new_tokens;
        return n;
    }
};

}  // namespace se
