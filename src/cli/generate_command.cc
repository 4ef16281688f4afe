#include "cli/generate_command.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "cli/engine_setup.h"
#include "cli/generation_report.h"
#include "cli/prompts_file.h"
#include "cli/sampling_flags.h"

namespace se::cli {
namespace {

struct GenerateFlags {
    EngineFlags engine;
    SamplingFlags sampling;
    std::string prompt;
    std::string prompts_file;
    bool chat = false;
};

Expected<RequestId> add_one(Engine& e, const PromptLine& line, StreamCallback on_delta) {
    if (line.prompt) return e.add_request(std::string_view(*line.prompt), line.params, {on_delta});
    if (line.prompt_token_ids)
        return e.add_request(*line.prompt_token_ids, line.params, {on_delta});
    SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, e.chat_prompt_ids(*line.messages));
    return e.add_request(std::move(ids), line.params, {on_delta});
}

nlohmann::ordered_json to_json(size_t index, const RequestOutput& out) {
    nlohmann::ordered_json j;
    j["index"] = index;
    j["text"] = out.text;
    j["token_ids"] = out.token_ids;
    j["finish_reason"] = out.finish_reason ? finish_reason_name(*out.finish_reason) : "";
    j["usage"] = {{"prompt_tokens", out.usage.prompt_tokens},
                  {"completion_tokens", out.usage.completion_tokens},
                  {"cached_tokens", out.usage.cached_tokens}};
    if (!out.logprobs.empty()) {
        // With --logprobs N: per token, its logprob and the top N (token id, logprob).
        auto& lps = j["logprobs"] = nlohmann::ordered_json::array();
        for (const SampledLogprobs& lp : out.logprobs) {
            nlohmann::ordered_json top = nlohmann::ordered_json::array();
            for (const TokenLogprob& t : lp.top_logprobs()) top.push_back({t.token, t.logprob});
            lps.push_back({{"logprob", lp.logprob}, {"top", std::move(top)}});
        }
    }
    if (!out.error.ok()) j["error"] = out.error.to_string();
    return j;
}

// Every line of the file as one batch; one JSON result per line on stdout, in input order.
int run_batch(Engine& e, const Expected<std::vector<PromptLine>>& lines) {
    std::map<RequestId, size_t> index_of;
    for (size_t i = 0; i < lines->size(); ++i) {
        auto id = add_one(e, (*lines)[i], {});
        if (!id.ok()) {
            return report_error(id.status().with_context(fmt::format("prompt {}", i + 1)));
        }
        index_of[id.value()] = i;
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<RequestOutput> outputs(lines->size());
    while (e.has_work()) {
        e.step();
        for (RequestOutput& out : e.take_finished()) outputs[index_of.at(out.id)] = std::move(out);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int64_t generated = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
        generated += outputs[i].usage.completion_tokens;
        fmt::print(
            "{}\n",
            to_json(i, outputs[i]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    fmt::print(stderr, "{} requests in {:.2f} s: {} tokens generated, {:.1f} output tok/s\n",
               outputs.size(), seconds, generated, generated / seconds);
    return 0;
}

int run_generate(const GenerateFlags& flags) {
    // A bad prompts file is reported before the model loads.
    Expected<std::vector<PromptLine>> lines = std::vector<PromptLine>{};
    if (!flags.prompts_file.empty()) {
        lines = read_prompts_file(flags.prompts_file, to_sampling_params(flags.sampling));
        if (!lines.ok()) return report_error(lines.status());
    }
    auto engine = start_engine(flags.engine);
    if (!engine.ok()) return report_error(engine.status());
    Engine& e = **engine;
    if (!flags.prompts_file.empty()) return run_batch(e, lines);
    auto on_delta = [](const StreamDelta& d) {
        std::fwrite(d.text.data(), 1, d.text.size(), stdout);
        std::fflush(stdout);
    };
    PromptLine line{.params = to_sampling_params(flags.sampling)};
    if (flags.chat) {
        line.messages =
            nlohmann::ordered_json::array({{{"role", "user"}, {"content", flags.prompt}}});
    } else {
        line.prompt = flags.prompt;
    }
    auto id = add_one(e, line, on_delta);
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
    CLI::App* cmd = app.add_subcommand("generate", "complete prompts and print the text");
    add_engine_flags(*cmd, flags->engine);
    add_sampling_flags(*cmd, flags->sampling);
    auto* prompt = cmd->add_option("-p,--prompt", flags->prompt, "the prompt text");
    auto* file = cmd->add_option("--prompts-file", flags->prompts_file,
                                 "JSONL file: one request per line ({\"prompt\": ...}, "
                                 "{\"prompt_token_ids\": [...]} or {\"messages\": [...]}), run "
                                 "as one batch; prints one JSON result per line");
    prompt->excludes(file);
    cmd->add_flag("--chat", flags->chat, "wrap the prompt in the model's chat template");
    cmd->callback([flags, &run, prompt, file] {
        if (prompt->count() == 0 && file->count() == 0) {
            throw CLI::RequiredError("--prompt or --prompts-file");
        }
        run = [flags] { return run_generate(*flags); };
    });
}

}  // namespace se::cli
