#include "engine/prune_job.h"

#include <fmt/core.h>

namespace se {

// The API's names for the two scoring rules (as the issue and the reference engine's prefix-prune
// route spell them). They name the papers the rules come from; no engine method is involved.
Expected<PrunePolicy> parse_prune_policy(std::string_view name) {
    if (name == "snapkv_global") return PrunePolicy::kObservationWindow;
    if (name == "kvzip_global") return PrunePolicy::kReconstruction;
    return invalid_argument(
        fmt::format("policy: unknown '{}' (snapkv_global or kvzip_global)", name));
}

std::string_view prune_policy_name(PrunePolicy policy) {
    switch (policy) {
        case PrunePolicy::kObservationWindow:
            return "snapkv_global";
        case PrunePolicy::kReconstruction:
            return "kvzip_global";
    }
    return "?";
}

std::string_view prune_job_state_name(PruneJobState state) {
    switch (state) {
        case PruneJobState::kQueued:
            return "queued";
        case PruneJobState::kRunning:
            return "running";
        case PruneJobState::kCompleted:
            return "completed";
        case PruneJobState::kBlocked:
            return "blocked";
        case PruneJobState::kFailed:
            return "failed";
    }
    return "?";
}

}  // namespace se
