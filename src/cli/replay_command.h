// `sparse-engine replay`: replays deterministic synthetic agent sessions (eval/agent_trace.h)
// against the engine with a given concurrency, optionally on Chain Cache chains, and reports
// end-to-end time, prompt / prefilled / reused tokens and output throughput.
#pragma once

#include <CLI/CLI.hpp>

namespace se::cli {

// Registers the subcommand; `run` is set to the function main calls when it is chosen.
void add_replay_command(CLI::App& app, std::function<int()>& run);

}  // namespace se::cli
