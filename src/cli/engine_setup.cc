#include "cli/engine_setup.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace se::cli {
namespace {

// A progress bar on a terminal; nothing when stderr is a file or a pipe (logs stay clean).
std::function<void(float)> progress_printer() {
    if (isatty(STDERR_FILENO) == 0) return {};
    return [last = -1](float fraction) mutable {
        const int percent = static_cast<int>(fraction * 100.0f);
        if (percent == last) return;
        last = percent;
        const int filled = percent / 4;
        fmt::print(stderr, "\rloading model [{:<25}] {:3d}%", std::string(filled, '#'), percent);
        if (percent >= 100) fmt::print(stderr, "\r{:60}\r", "");
        std::fflush(stderr);
    };
}

}  // namespace

Expected<std::unique_ptr<Engine>> start_engine(const EngineFlags& flags) {
    SE_ASSIGN_OR_RETURN(EngineConfig config, to_engine_config(flags));
    config.load.on_progress = progress_printer();
    SE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(config));
    const ModelConfig& mc = engine->model_config();
    fmt::print(stderr,
               "model {} ({}, {} layers, hidden {}), device {}, method {}, KV capacity {} tokens, "
               "max-model-len {}\n",
               config.load.model, mc.architecture, mc.num_layers, mc.hidden_size,
               engine->device_name(), config.sparse_method, engine->kv_capacity_tokens(),
               engine->max_model_len());
    return engine;
}

int report_error(const Status& status) {
    fmt::print(stderr, "error: {}\n", status.to_string());
    return 1;
}

}  // namespace se::cli
