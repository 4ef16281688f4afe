// Prefix-Cache Pruning as the engine runs it: a job over one cached prefix that scores the
// tokens of its ranges, keeps the best and frees the rest (kv/prune_plan.h decides, the scorer
// scores, kv/prefix_pruner.h applies). A job is queued when submitted and runs at the start of
// the engine's next step:
//
//   queued -> running -> completed   (result filled in)
//                     -> blocked     (a running request reads a block of the ranges; nothing
//                                     changed; submit again once it finished)
//                     -> failed      (the prefix is not cached, no observation window, ...)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "kv/prune_plan.h"

namespace se {

enum class PrunePolicy : uint8_t {
    // Queries of the observation window after the last range score the range tokens: the mean
    // attention probability over the window's rows, max over heads and layers.
    kObservationWindow,
    // Reconstruction scoring: the prefix is replayed after a "repeat the context"
    // instruction and each range token scores the most attention any replayed query, head or
    // layer gives it.
    kReconstruction,
};

Expected<PrunePolicy> parse_prune_policy(std::string_view name);
std::string_view prune_policy_name(PrunePolicy policy);

// What is pruned: a cached prefix of the radix prefix cache (methods that keep the whole
// history: whole blocks, ranges shrunk to blocks), or, with chain_id, the state an IDLE Chain
// Cache chain retained (methods that evict: any token range; `prefix` must begin with the
// tokens the chain processed, and only positions the state still holds count).
struct PruneJobRequest {
    std::vector<int32_t> prefix;  // token ids of the cached prefix or the chain's history
    std::string cache_salt;       // the salt its requests used (prefix cache)
    std::string chain_id;         // prune this chain's state instead
    std::vector<TokenRange> ranges;
    std::optional<int32_t> keep_tokens;  // exactly one of keep_tokens and keep_ratio
    std::optional<double> keep_ratio;
    PrunePolicy policy = PrunePolicy::kObservationWindow;
    int32_t observation_tokens = 64;  // kObservationWindow: the window after the last range
    int32_t score_chunk_size = 2048;  // kReconstruction: range tokens replayed per scoring pass
    int32_t prev_postfix_size = 64;   // kReconstruction: tokens before a chunk replayed with it
};

enum class PruneJobState : uint8_t { kQueued, kRunning, kCompleted, kBlocked, kFailed };
std::string_view prune_job_state_name(PruneJobState state);

struct PruneJobResult {
    int64_t id = 0;
    PruneJobState state = PruneJobState::kQueued;
    std::string message;             // why blocked or failed
    std::vector<TokenRange> ranges;  // as aligned (and split around blocks pruned before)
    bool shrunk = false;             // some range was moved inward to whole blocks
    int32_t tokens_in_ranges = 0;    // eligible
    int32_t kept = 0;
    int32_t freed = 0;           // tokens_in_ranges - kept
    int32_t already_pruned = 0;  // tokens of the ranges an earlier job pruned
    int32_t blocks_freed = 0;    // KV blocks returned to the pool
};

}  // namespace se
