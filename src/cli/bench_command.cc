#include "cli/bench_command.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "cli/engine_setup.h"

namespace se::cli {
namespace {

struct BenchFlags {
    EngineFlags engine;
    int32_t prompt_tokens = 512;
    int32_t gen_tokens = 128;
    int32_t repetitions = 5;
    std::string output = "md";
    int32_t num_prompts = 0;  // > 0: offline throughput, batched against one at a time
};

using Clock = std::chrono::steady_clock;

// pp: one prompt of n random tokens processed in a single step (the first sampled token's
// logits included, as llama-bench computes the last logits).
double time_prompt(Engine& engine, int32_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> prompt(static_cast<size_t>(n));
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % engine.model_config().vocab_size);
    SamplingParams params;
    params.temperature = 0.0f;
    params.max_tokens = 1;
    const auto start = Clock::now();
    auto out = engine.generate({prompt}, params);
    SE_CHECK(out.ok());
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// tg: n tokens generated one step at a time after a one-token prompt.
double time_generation(Engine& engine, int32_t n) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = n;
    const std::vector<int32_t> prompt{engine.tokenizer().bos_id().value_or(0)};
    const auto start = Clock::now();
    auto out = engine.generate({prompt}, params);
    SE_CHECK(out.ok() && out.value()[0].usage.completion_tokens == n);
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Summary {
    double mean = 0.0;
    double sd = 0.0;
};

Summary summarize(const std::vector<double>& tps) {
    Summary s;
    s.mean = std::accumulate(tps.begin(), tps.end(), 0.0) / tps.size();
    double var = 0;
    for (double v : tps) var += (v - s.mean) * (v - s.mean);
    s.sd = tps.size() > 1 ? std::sqrt(var / (tps.size() - 1)) : 0.0;
    return s;
}

// llama-bench's two formats: a markdown table, or one JSON object per test in an array.
void print_results(const BenchFlags& flags, const std::string& model,
                   const std::vector<std::pair<std::string, Summary>>& rows) {
    if (flags.output == "json") {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& [test, s] : rows) {
            out.push_back({{"model", model},
                           {"threads", flags.engine.threads},
                           {"test", test},
                           {"avg_ts", s.mean},
                           {"stddev_ts", s.sd}});
        }
        fmt::print("{}\n", out.dump(2));
        return;
    }
    fmt::print("| model | backend | threads | test | t/s |\n| --- | --- | ---: | ---: | ---: |\n");
    for (const auto& [test, s] : rows) {
        fmt::print("| {} | CPU | {} | {} | {:.2f} ± {:.2f} |\n", model, flags.engine.threads, test,
                   s.mean, s.sd);
    }
}

struct ThroughputRun {
    double seconds = 0.0;
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 0;
    double decode_seconds = 0.0;  // steps that only decoded
    int64_t decode_tokens = 0;

    double total_tps() const { return (prompt_tokens + output_tokens) / seconds; }
    double output_tps() const { return output_tokens / seconds; }
    double decode_tps() const { return decode_tokens / decode_seconds; }
};

// Runs `prompts` through `engine` as batches of `batch` requests, greedy, ignoring EOS.
ThroughputRun run_requests(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                           int32_t gen_tokens, size_t batch) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = gen_tokens;
    const EngineStats before = engine.stats();
    ThroughputRun run;
    const auto start = Clock::now();
    for (size_t i = 0; i < prompts.size(); i += batch) {
        const size_t end = std::min(prompts.size(), i + batch);
        auto out = engine.generate({prompts.begin() + i, prompts.begin() + end}, params);
        SE_CHECK(out.ok(), "%s", out.status().to_string().c_str());
        for (const RequestOutput& o : *out) {
            run.prompt_tokens += o.usage.prompt_tokens;
            run.output_tokens += o.usage.completion_tokens;
        }
    }
    run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    run.decode_seconds = engine.stats().decode_seconds - before.decode_seconds;
    run.decode_tokens = engine.stats().decode_tokens - before.decode_tokens;
    return run;
}

// Offline throughput: num_prompts requests as one batch, then the same requests one at a time.
int run_throughput(const BenchFlags& flags, Engine& engine) {
    std::mt19937 rng(42);
    std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(flags.num_prompts));
    for (auto& p : prompts) {
        p.resize(static_cast<size_t>(flags.prompt_tokens));
        for (int32_t& t : p) t = static_cast<int32_t>(rng() % engine.model_config().vocab_size);
    }
    const ThroughputRun batched = run_requests(engine, prompts, flags.gen_tokens, prompts.size());
    const ThroughputRun alone = run_requests(engine, prompts, flags.gen_tokens, 1);
    if (flags.output == "json") {
        auto row = [](const ThroughputRun& r) {
            return nlohmann::json{{"seconds", r.seconds},
                                  {"total_tps", r.total_tps()},
                                  {"output_tps", r.output_tps()},
                                  {"decode_tps", r.decode_tps()}};
        };
        fmt::print("{}\n", nlohmann::json{{"num_prompts", flags.num_prompts},
                                          {"prompt_tokens", flags.prompt_tokens},
                                          {"gen_tokens", flags.gen_tokens},
                                          {"batched", row(batched)},
                                          {"sequential", row(alone)}}
                               .dump(2));
        return 0;
    }
    fmt::print(
        "| mode | seconds | total tok/s | output tok/s | decode tok/s |\n"
        "| --- | ---: | ---: | ---: | ---: |\n");
    for (const auto& [name, r] : {std::pair{"batched", batched}, std::pair{"sequential", alone}}) {
        fmt::print("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", name, r.seconds, r.total_tps(),
                   r.output_tps(), r.decode_tps());
    }
    fmt::print("| ratio | | {:.2f} | {:.2f} | {:.2f} |\n", batched.total_tps() / alone.total_tps(),
               batched.output_tps() / alone.output_tps(),
               batched.decode_tps() / alone.decode_tps());
    return 0;
}

int run_bench(BenchFlags flags) {
    // One step must hold the whole prompt, as llama-bench's -b/-ub 512 default does.
    flags.engine.max_num_batched_tokens =
        std::max(flags.engine.max_num_batched_tokens, flags.prompt_tokens);
    flags.engine.prefill_chunk_size =
        std::max(flags.engine.prefill_chunk_size, flags.prompt_tokens);
    if (flags.num_prompts > 0) {
        // Every prompt of the batch in one prefill step where the budget allows, as vLLM does.
        flags.engine.max_num_seqs = std::max(flags.engine.max_num_seqs, flags.num_prompts);
        flags.engine.enable_prefix_caching = false;
    }
    auto started = start_engine(flags.engine);
    if (!started.ok()) return report_error(started.status());
    Engine& engine = **started;
    if (flags.num_prompts > 0) return run_throughput(flags, engine);
    time_prompt(engine, std::min(flags.prompt_tokens, 32), 0);  // warm-up
    std::vector<double> pp, tg;
    for (int32_t r = 0; r < flags.repetitions; ++r) {
        if (flags.prompt_tokens > 0) {
            pp.push_back(flags.prompt_tokens / time_prompt(engine, flags.prompt_tokens, r + 1));
        }
        if (flags.gen_tokens > 0) {
            tg.push_back(flags.gen_tokens / time_generation(engine, flags.gen_tokens));
        }
    }
    const ModelConfig& mc = engine.model_config();
    const std::string model =
        fmt::format("{} {}L/{}d", mc.architecture, mc.num_layers, mc.hidden_size);
    std::vector<std::pair<std::string, Summary>> rows;
    if (!pp.empty()) rows.emplace_back(fmt::format("pp{}", flags.prompt_tokens), summarize(pp));
    if (!tg.empty()) rows.emplace_back(fmt::format("tg{}", flags.gen_tokens), summarize(tg));
    print_results(flags, model, rows);
    return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, std::function<int()>& run) {
    auto flags = std::make_shared<BenchFlags>();
    CLI::App* cmd =
        app.add_subcommand("bench", "prompt and generation throughput (llama-bench style)");
    add_engine_flags(*cmd, flags->engine);
    cmd->add_option("-p,--n-prompt", flags->prompt_tokens, "prompt tokens (pp test)")
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", flags->gen_tokens, "generated tokens (tg test)")
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", flags->repetitions, "repetitions of each test")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--num-prompts", flags->num_prompts,
                    "offline throughput: this many requests batched vs one at a time")
        ->capture_default_str();
    cmd->add_option("-o,--output", flags->output, "md | json")
        ->capture_default_str()
        ->check(CLI::IsMember({"md", "json"}));
    cmd->callback([flags, &run] { run = [flags] { return run_bench(*flags); }; });
}

}  // namespace se::cli
