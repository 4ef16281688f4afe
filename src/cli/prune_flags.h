// The pruning flags `replay` and `eval --turns` share: prune what a session holds of its turns
// once they are older than --prune-after-turns turns (docs/prefix-pruning.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "core/expected.h"
#include "engine/prune_job.h"

namespace se::cli {

struct PruneFlags {
    int32_t after_turns = 0;  // 0: never prune
    double keep_ratio = 0.2;
    std::string policy{prune_policy_name(PrunePolicy::kObservationWindow)};
};

// --prune-after-turns, --prune-keep-ratio, --prune-policy; `what` names what is pruned ("tool
// result", say) and `needs` the flag pruning depends on.
void add_prune_flags(CLI::App& cmd, PruneFlags& flags, std::string_view what,
                     std::string_view needs);

// Errors name the flag: a negative --prune-after-turns, a ratio outside [0, 1], an unknown policy.
Status check_prune_flags(const PruneFlags& flags);

}  // namespace se::cli
