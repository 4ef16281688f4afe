// The token-level decision of Prefix-Cache Pruning, before any KV moves: which positions of a
// cached prefix stay. Ranges [L, R) (zero-based, half-open) are shrunk inward to whole blocks
// (L up, R down to a multiple of the block size; a range left empty prunes nothing), lose the
// blocks an earlier job pruned already (a range may split in two around them), and share one
// keep budget; the kept positions are the `keep` best scores over all of them (one global mask
// shared by every layer and head), ties to the lower position.
//
//   eligible = sum of aligned range widths         keep = keep_tokens, or floor(eligible * ratio)
//   freed    = eligible - keep                     (positions outside the ranges always stay)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/expected.h"

namespace se {

struct TokenRange {
    int32_t begin = 0;
    int32_t end = 0;  // exclusive
    bool operator==(const TokenRange&) const = default;
};

struct PruneRequest {
    int32_t prefix_tokens = 0;  // the cached prefix the ranges lie in
    int32_t block_size = 16;
    std::vector<TokenRange> ranges;
    std::optional<int32_t> keep_tokens;  // exactly one of keep_tokens and keep_ratio
    std::optional<double> keep_ratio;    // in [0, 1]
    // Block indices (position / block_size) pruned by an earlier job: left out of the ranges
    // (their remaining entries stay as they are) and counted in already_pruned.
    std::vector<int32_t> pruned_blocks;
};

struct PrunePlan {
    std::vector<TokenRange> ranges;  // aligned, ascending, non-empty
    bool shrunk = false;             // some range end was moved inward (or a range dropped)
    int32_t already_pruned = 0;      // tokens of the aligned ranges in pruned_blocks
    int32_t eligible = 0;
    int32_t keep = 0;
    std::vector<int32_t> kept;     // ascending positions inside the ranges that stay
    std::vector<int32_t> dropped;  // ascending positions inside the ranges that go
    int32_t freed() const { return eligible - keep; }
};

// Aligns the request's ranges and sizes its budget. Errors name the field: a range outside
// [0, prefix_tokens) or with begin > end, overlapping ranges, a block size < 1, both or neither
// of keep_tokens / keep_ratio, a negative keep or a ratio outside [0, 1].
Expected<PrunePlan> align_prune_ranges(const PruneRequest& request);

// Completes `plan` from scores: `scores[i]` is the score of the i-th eligible position (ranges
// in order, positions ascending). Keeps the plan.keep highest, ties to the lower position.
void choose_kept(std::span<const float> scores, PrunePlan& plan);
// The same over an explicit list of eligible positions (ascending; plan.keep of them stay).
void choose_kept_among(std::span<const int32_t> candidates, std::span<const float> scores,
                       PrunePlan& plan);

}  // namespace se
