#include "cli/chat_command.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/engine_setup.h"
#include "cli/generation_report.h"
#include "cli/sampling_flags.h"

namespace se::cli {
namespace {

struct ChatFlags {
    EngineFlags engine;
    SamplingFlags sampling;
    std::string prompt;
    std::string system;
};

// Runs one assistant turn over `messages`, streaming it to stdout; returns its text.
Expected<std::string> assistant_turn(Engine& engine, const nlohmann::ordered_json& messages,
                                     const SamplingParams& params) {
    SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, engine.chat_prompt_ids(messages));
    auto on_delta = [](const StreamDelta& d) {
        std::fwrite(d.text.data(), 1, d.text.size(), stdout);
        std::fflush(stdout);
    };
    SE_ASSIGN_OR_RETURN(RequestId id,
                        engine.add_request(std::move(ids), params, {.on_delta = on_delta}));
    (void)id;
    while (engine.has_work()) engine.step();
    std::fputc('\n', stdout);
    std::vector<RequestOutput> done = engine.take_finished();
    SE_CHECK(done.size() == 1);
    if (!done[0].error.ok()) return done[0].error;
    print_throughput(done[0]);
    return done[0].text;
}

int run_chat(const ChatFlags& flags) {
    auto engine = start_engine(flags.engine);
    if (!engine.ok()) return report_error(engine.status());
    const SamplingParams params = to_sampling_params(flags.sampling);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!flags.system.empty()) messages.push_back({{"role", "system"}, {"content", flags.system}});
    if (!flags.prompt.empty()) {
        messages.push_back({{"role", "user"}, {"content", flags.prompt}});
        auto reply = assistant_turn(**engine, messages, params);
        return reply.ok() ? 0 : report_error(reply.status());
    }
    const bool interactive = isatty(STDIN_FILENO) != 0;
    if (interactive) fmt::print(stderr, "type a message; /exit or Ctrl-D ends the chat\n");
    std::string line;
    while (true) {
        if (interactive) {
            fmt::print("> ");
            std::fflush(stdout);
        }
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        auto reply = assistant_turn(**engine, messages, params);
        if (!reply.ok()) return report_error(reply.status());
        messages.push_back({{"role", "assistant"}, {"content", reply.value()}});
    }
    return 0;
}

}  // namespace

void add_chat_command(CLI::App& app, std::function<int()>& run) {
    auto flags = std::make_shared<ChatFlags>();
    CLI::App* cmd = app.add_subcommand("chat", "chat with the model through its chat template");
    add_engine_flags(*cmd, flags->engine);
    add_sampling_flags(*cmd, flags->sampling);
    cmd->add_option("-p,--prompt", flags->prompt, "one user message: answer it and exit");
    cmd->add_option("--system", flags->system, "system message");
    cmd->callback([flags, &run] { run = [flags] { return run_chat(*flags); }; });
}

}  // namespace se::cli
