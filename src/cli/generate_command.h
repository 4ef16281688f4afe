// `sparse-engine generate`: one prompt in, streamed completion out, throughput on stderr.
#pragma once

#include <CLI/CLI.hpp>

namespace se::cli {

// Registers the subcommand; `run` is set to the function main calls when it is chosen.
void add_generate_command(CLI::App& app, std::function<int()>& run);

}  // namespace se::cli
