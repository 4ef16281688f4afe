// sparse-engine: command-line entry point. Each subcommand registers its flags and, when chosen,
// the function to run.
#include <CLI/CLI.hpp>
#include <functional>

#include "cli/bench_command.h"
#include "cli/chat_command.h"
#include "cli/eval_command.h"
#include "cli/generate_command.h"
#include "cli/replay_command.h"
#include "cli/serve_command.h"

int main(int argc, char** argv) {
    CLI::App app{"SparseEngine: a sparse-first LLM inference engine"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "sparse-engine 0.1.0");
    std::function<int()> run;
    se::cli::add_generate_command(app, run);
    se::cli::add_chat_command(app, run);
    se::cli::add_bench_command(app, run);
    se::cli::add_eval_command(app, run);
    se::cli::add_replay_command(app, run);
    se::cli::add_serve_command(app, run);
    CLI11_PARSE(app, argc, argv);
    return run ? run() : 0;
}
