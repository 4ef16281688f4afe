#include "engine/prune_job.h"

#include <fmt/core.h>

namespace se {

Expected<PrunePolicy> parse_prune_policy(std::string_view name) {
    if (name == "snapkv_global") return PrunePolicy::kSnapKvGlobal;
    if (name == "kvzip_global") return PrunePolicy::kKvzipGlobal;
    return invalid_argument(
        fmt::format("policy: unknown '{}' (snapkv_global or kvzip_global)", name));
}

std::string_view prune_policy_name(PrunePolicy policy) {
    switch (policy) {
        case PrunePolicy::kSnapKvGlobal:
            return "snapkv_global";
        case PrunePolicy::kKvzipGlobal:
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
