// Builds an engine from flags, drawing a progress indicator while the model loads and printing
// a one-line banner (model, method, KV capacity) to stderr.
#pragma once

#include <memory>

#include "cli/engine_flags.h"
#include "engine/engine.h"

namespace se::cli {

Expected<std::unique_ptr<Engine>> start_engine(const EngineFlags& flags);

// Prints "error: <message>" on one line to stderr and returns the process exit code.
int report_error(const Status& status);

}  // namespace se::cli
