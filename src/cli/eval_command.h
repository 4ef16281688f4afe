// `sparse-engine eval`: synthetic long-context tasks (passkey, needle, multikey, vartrack) run
// against the engine's KV method, scored and reported as a table or JSON.
#pragma once

#include <CLI/CLI.hpp>

namespace se::cli {

// Registers the subcommand; `run` is set to the function main calls when it is chosen.
void add_eval_command(CLI::App& app, std::function<int()>& run);

}  // namespace se::cli
