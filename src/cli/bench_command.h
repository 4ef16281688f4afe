// `sparse-engine bench`: prompt processing (pp) and token generation (tg) throughput, measured
// the way llama-bench measures them, printed as llama-bench's markdown table.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace se::cli {

void add_bench_command(CLI::App& app, std::function<int()>& run);

}  // namespace se::cli
