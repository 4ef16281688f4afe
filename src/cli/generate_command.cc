#include "cli/generate_command.h"

#include <fmt/core.h>

#include <cstdio>

#include "cli/engine_setup.h"
#include "cli/generation_report.h"
#include "cli/sampling_flags.h"

namespace se::cli {
namespace {

struct GenerateFlags {
    EngineFlags engine;
    SamplingFlags sampling;
    std::string prompt;
    bool chat = false;
};

int run_generate(const GenerateFlags& flags) {
    auto engine = start_engine(flags.engine);
    if (!engine.ok()) return report_error(engine.status());
    Engine& e = **engine;
    auto on_delta = [](const StreamDelta& d) {
        std::fwrite(d.text.data(), 1, d.text.size(), stdout);
        std::fflush(stdout);
    };
    Expected<RequestId> id = internal_error("unset");
    if (flags.chat) {
        auto ids = e.chat_prompt_ids(
            nlohmann::ordered_json::array({{{"role", "user"}, {"content", flags.prompt}}}));
        if (!ids.ok()) return report_error(ids.status());
        id = e.add_request(std::move(ids).value(), to_sampling_params(flags.sampling),
                           {.on_delta = on_delta});
    } else {
        id = e.add_request(std::string_view(flags.prompt), to_sampling_params(flags.sampling),
                           {.on_delta = on_delta});
    }
    if (!id.ok()) return report_error(id.status());
    while (e.has_work()) e.step();
    std::fputc('\n', stdout);
    for (const RequestOutput& out : e.take_finished()) {
        if (!out.error.ok()) return report_error(out.error);
        if (!out.logprobs.empty()) print_logprobs(e, out);
        print_throughput(out);
    }
    return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, std::function<int()>& run) {
    auto flags = std::make_shared<GenerateFlags>();
    CLI::App* cmd = app.add_subcommand("generate", "complete one prompt and print the text");
    add_engine_flags(*cmd, flags->engine);
    add_sampling_flags(*cmd, flags->sampling);
    cmd->add_option("-p,--prompt", flags->prompt, "the prompt text")->required();
    cmd->add_flag("--chat", flags->chat, "wrap the prompt in the model's chat template");
    cmd->callback([flags, &run] { run = [flags] { return run_generate(*flags); }; });
}

}  // namespace se::cli
