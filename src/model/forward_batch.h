// One forward pass over the tokens of a step, possibly from several sequences.
#pragma once

#include <cstdint>
#include <span>

#include "backend/step_shape.h"

namespace se {

struct ForwardBatch {
    std::span<const int32_t> token_ids;  // i32 [n]
    std::span<const int32_t> positions;  // i32 [n] logical positions, for RoPE
    // Rows of the step whose logits are wanted (usually the last token of each sequence).
    std::span<const int32_t> logit_rows;  // i32 [num_logit_rows]
    StepShape shape = {};  // for Ops::begin_step; the default says nothing beyond the spans
};

}  // namespace se
