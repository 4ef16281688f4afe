#include "cli/eval_command.h"

#include <fmt/core.h>

#include <chrono>
#include <map>

#include "cli/engine_setup.h"
#include "cli/eval_prompt_encoder.h"
#include "cli/eval_report.h"
#include "cli/eval_turns.h"
#include "eval/sample_set.h"
#include "eval/scorer.h"
#include "eval/task_registry.h"

namespace se::cli {
namespace {

struct EvalFlags {
    EngineFlags engine;  // its --seed also seeds the samples
    std::string task = "all";
    int32_t context_len = 2048;
    int32_t num_samples = 20;
    EvalTurns turns;
    std::string output = "md";
};

// Bad flag values exit with 2 (a usage error); failures once running exit with 1.
constexpr int kBadInputExitCode = 2;

int bad_input(const Status& status) {
    report_error(status);
    return kBadInputExitCode;
}

Status check_flags(const EvalFlags& flags) {
    if (flags.num_samples < 1) {
        return invalid_argument(
            fmt::format("--num-samples must be >= 1, not {}", flags.num_samples));
    }
    if (flags.context_len < 1) {
        return invalid_argument(
            fmt::format("--context-len must be >= 1, not {}", flags.context_len));
    }
    if (flags.output != "md" && flags.output != "json") {
        return invalid_argument(fmt::format("--output must be md or json, not '{}'", flags.output));
    }
    return check_eval_turns(flags.turns);
}

// The prompt plus the longest answer must fit the model's context.
Status check_context_len(const EvalFlags& flags, const Engine& engine) {
    if (flags.context_len + eval::kMaxAnswerTokens <= engine.max_model_len()) return {};
    return out_of_range(fmt::format(
        "--context-len {} is too long: prompt plus up to {} answer tokens must fit the model's "
        "context of {} tokens (--max-model-len)",
        flags.context_len, eval::kMaxAnswerTokens, engine.max_model_len()));
}

// Runs the samples as one batch (continuous batching fills the steps), greedy.
Expected<EvalTaskResult> run_task(Engine& engine, const ChatPromptEncoder& encoder,
                                  std::vector<eval::EvalSample> samples) {
    EvalTaskResult result;
    result.task = samples.front().task;
    std::map<RequestId, size_t> index_of;
    for (size_t i = 0; i < samples.size(); ++i) {
        SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, encoder.encode(samples[i].prompt));
        SamplingParams params;
        params.temperature = 0.0f;
        params.max_tokens = samples[i].max_new_tokens;
        SE_ASSIGN_OR_RETURN(RequestId id, engine.add_request(std::move(ids), params));
        index_of[id] = i;
        result.samples.emplace_back().sample = std::move(samples[i]);
    }
    const EngineStats before = engine.stats();
    const auto start = std::chrono::steady_clock::now();
    while (engine.has_work()) {
        engine.step();
        for (const RequestOutput& out : engine.take_finished()) {
            if (!out.error.ok()) return out.error;
            result.samples[index_of.at(out.id)].take_answer(out);
        }
    }
    result.record_engine_work(
        before, engine.stats(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return result;
}

int run_eval(const EvalFlags& flags) {
    auto tasks = eval::select_tasks(flags.task);
    if (!tasks.ok()) return bad_input(tasks.status().with_context("--task"));
    if (Status s = check_flags(flags); !s.ok()) return bad_input(s);
    auto started = start_engine(flags.engine);
    if (!started.ok()) return report_error(started.status());
    Engine& engine = **started;
    if (Status s = check_context_len(flags, engine); !s.ok()) return bad_input(s);
    const ChatPromptEncoder encoder(engine);
    EvalRun run{.model = engine.config().load.model,
                .method = flags.engine.sparse_method,
                .sparse_config = engine.config().sparse_config,
                .context_len = flags.context_len,
                .num_samples = flags.num_samples,
                .seed = flags.engine.seed,
                .threads = flags.engine.threads,
                .turns = flags.turns.turns,
                .prune_after_turns = flags.turns.prune.after_turns,
                .prune_keep_ratio = flags.turns.prune.keep_ratio,
                .tasks = {}};
    for (const eval::EvalTask& task : *tasks) {
        auto samples = eval::make_samples(task,
                                          {.seed = flags.engine.seed,
                                           .num_samples = flags.num_samples,
                                           .context_len = flags.context_len},
                                          encoder);
        if (!samples.ok()) {
            if (samples.status().code() == StatusCode::kOutOfRange) {
                return bad_input(samples.status().with_context("--context-len"));
            }
            return report_error(samples.status());
        }
        auto result =
            flags.turns.turns > 1
                ? run_task_in_turns(engine, encoder, std::move(samples).value(), flags.turns)
                : run_task(engine, encoder, std::move(samples).value());
        if (!result.ok()) return report_error(result.status().with_context(task.name));
        fmt::print(stderr, "eval {}: {}/{} correct, {:.0f} prompt tokens on average, {:.1f} s\n",
                   task.name, result->num_correct(), result->samples.size(),
                   result->mean_prompt_tokens(), result->wall_seconds);
        run.tasks.push_back(std::move(result).value());
    }
    if (flags.output == "json") {
        print_eval_json(run);
    } else {
        print_eval_markdown(run);
    }
    return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, std::function<int()>& run) {
    auto flags = std::make_shared<EvalFlags>();
    CLI::App* cmd = app.add_subcommand(
        "eval",
        "synthetic long-context accuracy (RULER-style passkey, needle, multikey, vartrack) of "
        "the KV method; --seed seeds the samples");
    add_engine_flags(*cmd, flags->engine);
    cmd->add_option("--task", flags->task, "passkey | needle | multikey | vartrack | all")
        ->capture_default_str();
    cmd->add_option("--context-len", flags->context_len,
                    "prompt length in tokens (each prompt is at most this, within ~2% of it)")
        ->capture_default_str();
    cmd->add_option("-k,--num-samples", flags->num_samples, "samples per task, run as one batch")
        ->capture_default_str();
    cmd->add_option("--turns", flags->turns.turns,
                    "run each sample as an agent session whose prompt arrives in this many turns "
                    "(on a chain for methods that evict; docs/eval.md)")
        ->capture_default_str();
    add_prune_flags(*cmd, flags->turns.prune, "prompt chunk", "--turns");
    cmd->add_option("-o,--output", flags->output, "md | json")->capture_default_str();
    cmd->callback([flags, &run] { run = [flags] { return run_eval(*flags); }; });
}

}  // namespace se::cli
