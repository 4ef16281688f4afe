// `sparse-engine serve [MODEL]`: the OpenAI-compatible HTTP server (src/server/,
// docs/serving.md). Listens at once (GET /health is 503 while the model loads), serves until
// SIGINT or SIGTERM, then drains within a grace period and exits 0.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace se::cli {

void add_serve_command(CLI::App& app, std::function<int()>& run);

}  // namespace se::cli
