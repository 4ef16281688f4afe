#include "cli/prune_flags.h"

#include <fmt/core.h>

namespace se::cli {

void add_prune_flags(CLI::App& cmd, PruneFlags& flags, std::string_view what,
                     std::string_view needs) {
    cmd.add_option("--prune-after-turns", flags.after_turns,
                   fmt::format("with {}: prune each {} once it is older than this many turns "
                               "(0: never)",
                               needs, what))
        ->capture_default_str();
    cmd.add_option("--prune-keep-ratio", flags.keep_ratio,
                   fmt::format("share of a pruned {}'s resident tokens that stays", what))
        ->capture_default_str();
    cmd.add_option("--prune-policy", flags.policy, "snapkv_global | kvzip_global")
        ->capture_default_str();
}

Status check_prune_flags(const PruneFlags& flags) {
    if (flags.after_turns < 0) return invalid_argument("--prune-after-turns must be >= 0");
    if (!(flags.keep_ratio >= 0.0 && flags.keep_ratio <= 1.0)) {
        return invalid_argument("--prune-keep-ratio must be in [0, 1]");
    }
    if (auto policy = parse_prune_policy(flags.policy); !policy.ok()) {
        return policy.status().with_context("--prune-policy");
    }
    return {};
}

}  // namespace se::cli
