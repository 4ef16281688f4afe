#include "cli/eval_report.h"

#include <fmt/core.h>

#include "eval/scorer.h"

namespace se::cli {
namespace {

double mean_accuracy(const EvalRun& run) {
    double total = 0.0;
    for (const EvalTaskResult& t : run.tasks) total += t.accuracy();
    return run.tasks.empty() ? 0.0 : total / run.tasks.size();
}

nlohmann::ordered_json sample_json(const EvalSampleResult& r) {
    return {{"index", r.sample.index},
            {"correct", r.correct},
            {"prompt_tokens", r.sample.num_prompt_tokens},
            {"depths", r.sample.depths},
            {"expected", r.sample.expected},
            {"answer", r.answer},
            {"answer_tokens", r.num_answer_tokens}};
}

nlohmann::ordered_json task_json(const EvalTaskResult& t) {
    nlohmann::ordered_json samples = nlohmann::ordered_json::array();
    for (const EvalSampleResult& r : t.samples) samples.push_back(sample_json(r));
    return {{"task", t.task},
            {"accuracy", t.accuracy()},
            {"correct", t.num_correct()},
            {"num_samples", t.samples.size()},
            {"mean_prompt_tokens", t.mean_prompt_tokens()},
            {"prefill_tokens", t.num_prefill_tokens},
            {"prefill_seconds", t.prefill_seconds},
            {"decode_tokens", t.num_decode_tokens},
            {"decode_seconds", t.decode_seconds},
            {"wall_seconds", t.wall_seconds},
            {"samples", std::move(samples)}};
}

}  // namespace

int32_t EvalTaskResult::num_correct() const {
    int32_t n = 0;
    for (const EvalSampleResult& r : samples) n += r.correct ? 1 : 0;
    return n;
}

double EvalTaskResult::accuracy() const {
    return samples.empty() ? 0.0 : double(num_correct()) / samples.size();
}

double EvalTaskResult::mean_prompt_tokens() const {
    double total = 0.0;
    for (const EvalSampleResult& r : samples) total += r.sample.num_prompt_tokens;
    return samples.empty() ? 0.0 : total / samples.size();
}

void EvalSampleResult::take_answer(const RequestOutput& out) {
    answer = out.text;
    num_answer_tokens = out.usage.completion_tokens;
    correct = eval::is_correct(sample.expected, out.text);
}

void EvalTaskResult::record_engine_work(const EngineStats& before, const EngineStats& after,
                                        double seconds) {
    wall_seconds = seconds;
    num_prefill_tokens = after.prefill_tokens - before.prefill_tokens;
    prefill_seconds = after.prefill_seconds - before.prefill_seconds;
    num_decode_tokens = after.decode_tokens - before.decode_tokens;
    decode_seconds = after.decode_seconds - before.decode_seconds;
}

void print_eval_markdown(const EvalRun& run) {
    fmt::print("{}, method {} {}, context {} tokens, {} samples per task, seed {}", run.model,
               run.method, run.sparse_config.dump(), run.context_len, run.num_samples, run.seed);
    if (run.turns > 1) {
        fmt::print(", {} turns, pruning chunks older than {} turns (keep {})", run.turns,
                   run.prune_after_turns, run.prune_keep_ratio);
    }
    fmt::print("\n\n");
    fmt::print(
        "| task | accuracy | correct | mean prompt tokens | prefill s | prefill tok/s | decode s "
        "| decode tok/s |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (const EvalTaskResult& t : run.tasks) {
        const double prefill_tps =
            t.prefill_seconds > 0 ? t.num_prefill_tokens / t.prefill_seconds : 0.0;
        const double decode_tps =
            t.decode_seconds > 0 ? t.num_decode_tokens / t.decode_seconds : 0.0;
        fmt::print("| {} | {:.2f} | {}/{} | {:.0f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", t.task,
                   t.accuracy(), t.num_correct(), t.samples.size(), t.mean_prompt_tokens(),
                   t.prefill_seconds, prefill_tps, t.decode_seconds, decode_tps);
    }
    if (run.tasks.size() > 1) fmt::print("| mean | {:.2f} | | | | | | |\n", mean_accuracy(run));
}

void print_eval_json(const EvalRun& run) {
    nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
    for (const EvalTaskResult& t : run.tasks) tasks.push_back(task_json(t));
    const nlohmann::ordered_json out = {{"model", run.model},
                                        {"method", run.method},
                                        {"sparse_config", run.sparse_config},
                                        {"context_len", run.context_len},
                                        {"num_samples", run.num_samples},
                                        {"seed", run.seed},
                                        {"threads", run.threads},
                                        {"turns", run.turns},
                                        {"prune_after_turns", run.prune_after_turns},
                                        {"prune_keep_ratio", run.prune_keep_ratio},
                                        {"accuracy", mean_accuracy(run)},
                                        {"tasks", std::move(tasks)}};
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace se::cli
