// `sparse-engine chat`: a conversation through the model's chat template. One-shot with
// --prompt; otherwise one user turn per input line (an interactive REPL on a terminal).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace se::cli {

void add_chat_command(CLI::App& app, std::function<int()>& run);

}  // namespace se::cli
