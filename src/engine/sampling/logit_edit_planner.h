// The host sampler's logit processing (logit bias, min_tokens mask, repetition and frequency /
// presence penalties) written as a list of per-token edits for a backend that samples where the
// logits are (backend/sampling_rows.h). Applied in order, the edits change each logit exactly as
// apply_logit_bias, mask_tokens and PenaltyApplier do on the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/sampling_rows.h"
#include "engine/sampling/sampling_params.h"

namespace se {

class LogitEditPlanner {
  public:
    // Appends row `row`'s edits to `edits`: one entry per token that any processing touches.
    // `masked` are the tokens min_tokens still masks (empty once enough outputs exist).
    void plan(int32_t row, const SamplingParams& params, std::span<const int32_t> masked,
              std::span<const int32_t> prompt_tokens, std::span<const int32_t> output_tokens,
              std::vector<LogitEdit>& edits);

  private:
    // The edit of `token` for the row being planned, created on first use.
    LogitEdit& edit_of(int32_t token);

    int32_t row_ = 0;
    std::vector<LogitEdit>* edits_ = nullptr;
    size_t first_ = 0;             // the row's first entry in *edits_
    std::vector<int32_t> index_;   // i32 [vocab]: entry - first_ of a token this row, or -1
    std::vector<int32_t> counts_;  // i32 [vocab]: occurrences in the output, this row
};

}  // namespace se
