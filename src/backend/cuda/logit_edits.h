// The per-token edits of a decode step's logits before sampling (logit bias, the min_tokens mask,
// the repetition / frequency / presence penalties), applied in place on the device so that the
// logits never travel to the host. The host combines each request's edits into one entry per
// (row, token), in the CPU sampler's order (engine/sampling/logits_processors.h):
//
//   logit = logit + bias                      apply_logit_bias
//   if (mask) logit = -inf                    mask_tokens (min_tokens not reached)
//   if (repetition != 1)                      PenaltyApplier::apply_repetition
//       logit = logit > 0 ? logit / repetition : logit * repetition
//   logit = logit - subtract                  PenaltyApplier::apply_frequency_presence
//
// each a single f32 operation rounded as on the CPU (no contraction into FMA), so the result is
// bitwise the CPU's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/sampling_rows.h"
#include "core/status.h"

namespace se::cuda {

struct LogitEditsParams {
    float* logits = nullptr;           // f32 [num_rows, row_stride], vocab used; edited in place
    const LogitEdit* edits = nullptr;  // [num_edits], device; at most one per (row, token)
    int64_t row_stride = 0;            // elements between rows, >= vocab
    int32_t num_rows = 0;
    int32_t vocab = 0;      // > 0
    int32_t num_edits = 0;  // >= 0; 0 launches nothing
};

// Applies every edit to its logit. An entry whose row or token lies outside the logits is
// skipped (the host validates ids; the kernel never writes out of bounds).
Status apply_logit_edits(const LogitEditsParams& p, cudaStream_t stream);

}  // namespace se::cuda
