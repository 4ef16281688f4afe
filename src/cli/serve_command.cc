#include "cli/serve_command.h"

#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <thread>

#include "cli/engine_flags.h"
#include "cli/engine_setup.h"
#include "server/api_server.h"
#include "server/engine_loop.h"

namespace se::cli {
namespace {

struct ServeFlags {
    EngineFlags engine;
    std::string positional_model;
    server::ServerOptions server;
    std::string max_body_size = "16MiB";
    double shutdown_grace_seconds = 30.0;
};

using Clock = std::chrono::steady_clock;

// Waits until `done` or `seconds` passed; true when done.
template <class Pred>
bool wait_for(Pred done, double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

int run_serve(ServeFlags flags) {
    if (!flags.positional_model.empty()) flags.engine.model = flags.positional_model;
    auto body_limit = parse_byte_size(flags.max_body_size);
    if (!body_limit.ok()) return report_error(body_limit.status());
    flags.server.max_body_bytes = body_limit.value();
    if (flags.server.served_model_name.empty()) {
        flags.server.served_model_name = flags.engine.served_model_name.empty()
                                             ? flags.engine.model
                                             : flags.engine.served_model_name;
    }
    flags.engine.served_model_name = flags.server.served_model_name;

    // Signals are taken by sigwait below, never by a handler: block them before any thread
    // starts so every thread inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    server::EngineLoop loop;
    server::ApiServer api(flags.server, loop);
    if (Status bound = api.bind(); !bound.ok()) return report_error(bound);
    fmt::print(stderr, "listening on http://{}:{} (loading the model)\n", flags.server.host,
               api.port());
    std::thread http([&api] { api.serve(); });

    auto engine = start_engine(flags.engine);
    if (!engine.ok()) {
        api.stop();
        http.join();
        return report_error(engine.status());
    }
    loop.start(std::move(engine).value());
    fmt::print(stderr, "serving '{}' on http://{}:{}\n", flags.server.served_model_name,
               flags.server.host, api.port());

    int sig = 0;
    sigwait(&signals, &sig);
    fmt::print(stderr, "{}: stopping; finishing {} running requests (grace {} s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", loop.num_in_flight(),
               flags.shutdown_grace_seconds);
    api.begin_shutdown();
    if (!wait_for([&] { return loop.num_in_flight() == 0; }, flags.shutdown_grace_seconds)) {
        fmt::print(stderr, "grace period over: cancelling {} requests\n", loop.num_in_flight());
        loop.cancel_all();
        wait_for([&] { return loop.num_in_flight() == 0; }, 10.0);
    }
    // Let handlers write what the engine already finished before the sockets close.
    wait_for([&] { return api.num_active() == 0; }, 5.0);
    api.stop();
    http.join();
    loop.stop();
    fmt::print(stderr, "stopped\n");
    return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, std::function<int()>& run) {
    auto flags = std::make_shared<ServeFlags>();
    CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (docs/serving.md)");
    // A flag given twice takes its last value, as vLLM's argparse does (launchers append).
    cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    add_engine_flags(*cmd, flags->engine);
    cmd->add_option("model_path", flags->positional_model,
                    "the model (as --model): GGUF file, HF model directory or alias");
    cmd->add_option("--host", flags->server.host, "address to bind")->capture_default_str();
    cmd->add_option("--port", flags->server.port, "port to bind (0: any free port)")
        ->capture_default_str();
    cmd->add_option("--api-key", flags->server.api_key,
                    "require 'Authorization: Bearer KEY' (except /health, /version, /metrics)");
    cmd->add_option("--max-waiting-requests", flags->server.max_waiting_requests,
                    "requests that may wait for their first step; more get 429")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 30));
    cmd->add_option("--max-body-size", flags->max_body_size,
                    "largest request body, e.g. 16MiB; larger get 413")
        ->capture_default_str();
    cmd->add_option("--http-threads", flags->server.http_threads,
                    "HTTP worker threads (each open stream holds one)")
        ->capture_default_str()
        ->check(CLI::Range(8, 1 << 16));
    cmd->add_option("--shutdown-grace-seconds", flags->shutdown_grace_seconds,
                    "on SIGINT/SIGTERM, how long running requests may finish before they are "
                    "cancelled")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->callback([flags, &run] { run = [flags] { return run_serve(*flags); }; });
}

}  // namespace se::cli
