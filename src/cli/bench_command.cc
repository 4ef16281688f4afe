#include "cli/bench_command.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
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
    int32_t num_prompts = 0;    // > 0: offline throughput, batched against one at a time
    std::string decode_window;  // "WARMUP:STEPS": time full-batch decode steps (paper protocol)
    // Given on the command line: kept as given, so a long prompt is chunked.
    bool prefill_chunk_size_given = false;
    bool max_num_batched_tokens_given = false;
};

// The paper protocol's window (BENCHMARKS.md): once every prompt of the batch is prefilled,
// num_warmup_steps decode steps are discarded and the next num_steps timed.
struct DecodeWindow {
    int32_t num_warmup_steps = 0;
    int32_t num_steps = 0;
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
    // --load-format dummy may run without a tokenizer: the config's BOS id then.
    const std::optional<int32_t> bos =
        engine.has_tokenizer() ? engine.tokenizer().bos_id() : engine.model_config().bos_token_id;
    const std::vector<int32_t> prompt{bos.value_or(0)};
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

// llama-bench's two formats: a markdown table, or one JSON object per test in an array (with
// every repetition's t/s in samples_ts).
void print_results(const BenchFlags& flags, const std::string& model,
                   const std::vector<std::pair<std::string, std::vector<double>>>& rows) {
    if (flags.output == "json") {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& [test, tps] : rows) {
            const Summary s = summarize(tps);
            out.push_back({{"model", model},
                           {"threads", flags.engine.threads},
                           {"test", test},
                           {"avg_ts", s.mean},
                           {"stddev_ts", s.sd},
                           {"samples_ts", tps}});
        }
        fmt::print("{}\n", out.dump(2));
        return;
    }
    fmt::print("| model | backend | threads | test | t/s |\n| --- | --- | ---: | ---: | ---: |\n");
    for (const auto& [test, tps] : rows) {
        const Summary s = summarize(tps);
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

std::vector<std::vector<int32_t>> random_prompts(const Engine& engine, const BenchFlags& flags) {
    std::mt19937 rng(42);
    std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(flags.num_prompts));
    for (auto& p : prompts) {
        p.resize(static_cast<size_t>(flags.prompt_tokens));
        for (int32_t& t : p) t = static_cast<int32_t>(rng() % engine.model_config().vocab_size);
    }
    return prompts;
}

nlohmann::json throughput_json(const ThroughputRun& r) {
    return {{"seconds", r.seconds},
            {"total_tps", r.total_tps()},
            {"output_tps", r.output_tps()},
            {"decode_tps", r.decode_tps()}};
}

// Offline throughput: num_prompts requests as one batch, then the same requests one at a time.
int run_throughput(const BenchFlags& flags, Engine& engine) {
    const std::vector<std::vector<int32_t>> prompts = random_prompts(engine, flags);
    const ThroughputRun batched = run_requests(engine, prompts, flags.gen_tokens, prompts.size());
    const ThroughputRun alone = run_requests(engine, prompts, flags.gen_tokens, 1);
    if (flags.output == "json") {
        fmt::print("{}\n", nlohmann::json{{"num_prompts", flags.num_prompts},
                                          {"prompt_tokens", flags.prompt_tokens},
                                          {"gen_tokens", flags.gen_tokens},
                                          {"kv_capacity_tokens", engine.kv_capacity_tokens()},
                                          {"batched", throughput_json(batched)},
                                          {"sequential", throughput_json(alone)}}
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

Expected<DecodeWindow> parse_decode_window(const std::string& text) {
    int32_t warmup = -1;
    int32_t steps = -1;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%d:%d%c", &warmup, &steps, &tail) != 2 || warmup < 0 ||
        steps < 1) {
        return invalid_argument(fmt::format(
            "--decode-window: '{}' is not WARMUP:STEPS (e.g. 32:256, STEPS >= 1)", text));
    }
    return DecodeWindow{.num_warmup_steps = warmup, .num_steps = steps};
}

struct WindowRun {
    ThroughputRun whole;               // the batch from first prefill to last token
    double seconds = 0.0;              // of the timed steps, wall clock around Engine::step()
    int64_t tokens = 0;                // decoded in the timed steps
    double mean_context_tokens = 0.0;  // tokens one request's attention reads in a timed step
    // Of `seconds`: in the runner's execute() and waiting for tokens sampled on the backend
    // (EngineStats); the rest is the engine's host work between them.
    double execute_seconds = 0.0;
    double sample_seconds = 0.0;
};

// Queues every prompt, greedy, EOS ignored; context[i] counts request i's prompt and sampled
// tokens as they stream; ids receives the requests' ids. Returns the number of prompt tokens.
Expected<int64_t> queue_batch(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                              int32_t gen_tokens, std::vector<int64_t>& context,
                              std::vector<RequestId>& ids) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = gen_tokens;
    int64_t num_prompt_tokens = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        context[i] = static_cast<int64_t>(prompts[i].size());
        num_prompt_tokens += context[i];
        RequestOptions options{.on_delta =
                                   [&context, i](const StreamDelta& d) {
                                       context[i] += static_cast<int64_t>(d.token_ids.size());
                                   },
                               .cache_salt = {},
                               .chain_id = {}};
        auto id = engine.add_request(prompts[i], params, std::move(options));
        if (!id.ok()) return id.status();
        ids.push_back(id.value());
    }
    return num_prompt_tokens;
}

// The batch is queued at once; steps alternate prefill chunks with decode steps of the requests
// already prefilled, so only the steps after the last prompt chunk decode the whole batch:
//
//   P d P d ... P | D ... D (warmup) | D D ... D (timed) | requests aborted
//
// Every step from the last prefill to the window's end must decode every request: a prefill
// (a preempted request recomputing) or a finished request there invalidates the run.
Expected<WindowRun> run_window(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                               int32_t gen_tokens, DecodeWindow window) {
    // Request i's next decode step reads its prompt and every token sampled so far.
    std::vector<int64_t> context(prompts.size());
    std::vector<RequestId> ids;
    SE_ASSIGN_OR_RETURN(const int64_t num_prompt_tokens,
                        queue_batch(engine, prompts, gen_tokens, context, ids));
    const auto batch = static_cast<int64_t>(prompts.size());
    const EngineStats first = engine.stats();
    const int32_t window_end = window.num_warmup_steps + window.num_steps;
    int32_t num_full_steps = 0;  // decode steps since the batch filled
    int64_t context_read = 0;
    WindowRun run;
    const auto start = Clock::now();
    Clock::time_point window_start;
    EngineStats window_first;
    while (engine.has_work()) {
        const EngineStats before = engine.stats();
        const bool filled = before.prefill_tokens - first.prefill_tokens >= num_prompt_tokens;
        const bool timed =
            filled && num_full_steps >= window.num_warmup_steps && num_full_steps < window_end;
        if (timed && num_full_steps == window.num_warmup_steps) {
            window_start = Clock::now();
            window_first = engine.stats();
        }
        if (timed) context_read += std::accumulate(context.begin(), context.end(), int64_t{0});
        engine.step();
        for (const RequestOutput& o : engine.take_finished()) {
            run.whole.prompt_tokens += o.usage.prompt_tokens;
            run.whole.output_tokens += o.usage.completion_tokens;
        }
        if (!filled || num_full_steps >= window_end) continue;
        const EngineStats& after = engine.stats();
        const int64_t decoded = after.decode_tokens - before.decode_tokens;
        if (after.prefill_tokens != before.prefill_tokens || decoded != batch) {
            return failed_precondition(fmt::format(
                "--decode-window {}:{}: decode step {} after the batch filled ran {} of {} "
                "requests{}; raise -n or lower the window or --num-prompts",
                window.num_warmup_steps, window.num_steps, num_full_steps + 1, decoded, batch,
                after.prefill_tokens != before.prefill_tokens ? " and a prefill" : ""));
        }
        if (++num_full_steps == window_end) {
            run.seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
            run.execute_seconds = after.decode_seconds - window_first.decode_seconds;
            run.sample_seconds = after.backend_sample_seconds - window_first.backend_sample_seconds;
            // The paper protocol's 2048 output tokens need not all be decoded once the window
            // is timed: the rest would take minutes at 32K contexts and measure nothing.
            for (const RequestId id : ids) engine.abort(id);
        }
    }
    if (num_full_steps < window_end) {
        return failed_precondition(fmt::format(
            "--decode-window {}:{}: only {} decode steps ran after the batch filled; raise -n",
            window.num_warmup_steps, window.num_steps, num_full_steps));
    }
    run.whole.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    run.whole.decode_seconds = engine.stats().decode_seconds - first.decode_seconds;
    run.whole.decode_tokens = engine.stats().decode_tokens - first.decode_tokens;
    run.tokens = int64_t{window.num_steps} * batch;
    run.mean_context_tokens = static_cast<double>(context_read) / static_cast<double>(run.tokens);
    return run;
}

// Paper protocol: num_prompts requests as one batch; decode tok/s of the window's steps.
int run_decode_window(const BenchFlags& flags, Engine& engine, DecodeWindow window) {
    auto result = run_window(engine, random_prompts(engine, flags), flags.gen_tokens, window);
    if (!result.ok()) return report_error(result.status());
    const WindowRun& r = result.value();
    const double tps = static_cast<double>(r.tokens) / r.seconds;
    const auto per_step_ms = [&](double seconds) { return seconds / window.num_steps * 1e3; };
    const double step_ms = per_step_ms(r.seconds);
    if (flags.output == "json") {
        fmt::print("{}\n",
                   nlohmann::json{
                       {"num_prompts", flags.num_prompts},
                       {"prompt_tokens", flags.prompt_tokens},
                       {"gen_tokens", flags.gen_tokens},
                       {"kv_capacity_tokens", engine.kv_capacity_tokens()},
                       {"batched", throughput_json(r.whole)},
                       {"window",
                        {{"warmup_steps", window.num_warmup_steps},
                         {"steps", window.num_steps},
                         {"seconds", r.seconds},
                         {"decode_tps", tps},
                         {"step_ms", step_ms},
                         {"execute_ms", per_step_ms(r.execute_seconds)},
                         {"sample_ms", per_step_ms(r.sample_seconds)},
                         {"host_ms", per_step_ms(r.seconds - r.execute_seconds - r.sample_seconds)},
                         {"mean_context_tokens", r.mean_context_tokens}}}}
                       .dump(2));
        return 0;
    }
    fmt::print(
        "| requests | window steps | seconds | step ms | execute / sample / host ms | "
        "decode tok/s | mean context | whole-run decode tok/s |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    fmt::print(
        "| {} x ({} + {}) | {} after {} | {:.3f} | {:.3f} | {:.3f} / {:.3f} / {:.3f} | {:.1f} | "
        "{:.0f} | {:.1f} |\n",
        flags.num_prompts, flags.prompt_tokens, flags.gen_tokens, window.num_steps,
        window.num_warmup_steps, r.seconds, step_ms, per_step_ms(r.execute_seconds),
        per_step_ms(r.sample_seconds),
        per_step_ms(r.seconds - r.execute_seconds - r.sample_seconds), tps, r.mean_context_tokens,
        r.whole.decode_tps());
    return 0;
}

int run_bench(BenchFlags flags) {
    std::optional<DecodeWindow> window;
    if (!flags.decode_window.empty()) {
        auto parsed = parse_decode_window(flags.decode_window);
        if (!parsed.ok()) return report_error(parsed.status());
        if (flags.num_prompts < 1) {
            return report_error(invalid_argument("--decode-window needs --num-prompts >= 1"));
        }
        window = parsed.value();
    }
    // One step must hold the whole prompt, as llama-bench's -b/-ub 512 default does, unless the
    // step size was given: then long prompts are chunked.
    if (!flags.max_num_batched_tokens_given) {
        flags.engine.max_num_batched_tokens =
            std::max(flags.engine.max_num_batched_tokens, flags.prompt_tokens);
    }
    if (!flags.prefill_chunk_size_given) {
        flags.engine.prefill_chunk_size =
            std::max(flags.engine.prefill_chunk_size, flags.prompt_tokens);
    }
    if (flags.num_prompts > 0) {
        // Every prompt of the batch in one prefill step where the budget allows, as vLLM does.
        flags.engine.max_num_seqs = std::max(flags.engine.max_num_seqs, flags.num_prompts);
        flags.engine.enable_prefix_caching = false;
    }
    auto started = start_engine(flags.engine);
    if (!started.ok()) return report_error(started.status());
    Engine& engine = **started;
    if (window) return run_decode_window(flags, engine, *window);
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
    std::vector<std::pair<std::string, std::vector<double>>> rows;
    if (!pp.empty()) rows.emplace_back(fmt::format("pp{}", flags.prompt_tokens), pp);
    if (!tg.empty()) rows.emplace_back(fmt::format("tg{}", flags.gen_tokens), tg);
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
    cmd->add_option("--decode-window", flags->decode_window,
                    "WARMUP:STEPS with --num-prompts: run the requests as one batch only; once "
                    "every prompt is prefilled, skip WARMUP decode steps and report the decode "
                    "tok/s of the next STEPS (e.g. 32:256)");
    cmd->add_option("-o,--output", flags->output, "md | json")
        ->capture_default_str()
        ->check(CLI::IsMember({"md", "json"}));
    cmd->callback([cmd, flags, &run] {
        flags->prefill_chunk_size_given = cmd->get_option("--prefill-chunk-size")->count() > 0;
        flags->max_num_batched_tokens_given =
            cmd->get_option("--max-num-batched-tokens")->count() > 0;
        run = [flags] { return run_bench(*flags); };
    });
}

}  // namespace se::cli
