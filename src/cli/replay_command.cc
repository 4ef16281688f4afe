#include "cli/replay_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/engine_setup.h"
#include "cli/prune_flags.h"
#include "eval/agent_trace.h"

namespace se::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct ReplayFlags {
    EngineFlags engine;  // its --seed also seeds the traces
    int32_t num_traces = 4;
    int32_t concurrency = 4;
    bool chains = false;
    // Prune each chain's tool results once they are older than this many turns (0: never).
    PruneFlags prune;
    eval::AgentTraceOptions trace;
    std::string output = "md";
};

struct ReplayTotals {
    int64_t turns = 0;
    int64_t prompt_tokens = 0;
    int64_t prefill_tokens = 0;
    int64_t cached_tokens = 0;  // reused through the prefix cache or a chain
    int64_t reused_tokens = 0;  // of those, through a chain
    int64_t output_tokens = 0;
    int64_t traces_cut = 0;   // traces that stopped early: the next turn would not fit the context
    int64_t chains_gone = 0;  // chains reclaimed while their session waited on a tool
    int64_t prune_jobs = 0;
    int64_t prune_blocked = 0;  // jobs that found their chain busy (nothing changed)
    int64_t prune_failed = 0;
    int64_t pruned_tokens = 0;   // freed by completed jobs
    int64_t prune_eligible = 0;  // tokens the jobs found resident in their ranges
    double seconds = 0.0;
};

// One session being replayed.
struct TraceRun {
    int32_t index = 0;
    eval::AgentTrace trace;
    std::vector<int32_t> history;
    size_t turn = 0;
    std::optional<RequestId> running;
    Clock::time_point ready_at;
    bool done = false;
    int32_t generation = 0;  // a chain reclaimed under pressure is gone: continue on a new one
    std::vector<TokenRange> tool_spans;  // [turn] where its tool result sits in the history
    size_t num_pruned_turns = 0;         // tool results handed to a prune job already
    std::optional<int64_t> prune_job;    // the next turn waits for it, as an agent would
};

std::string chain_of(const TraceRun& t) {
    return fmt::format("trace-{}.{}", t.index, t.generation);
}

// Queues the trace's next turn, or ends the trace when it has none or it would not fit.
Status start_turn(Engine& engine, const ReplayFlags& flags, TraceRun& t, ReplayTotals& totals) {
    const eval::AgentTurn& turn = t.trace.turns[t.turn];
    if (static_cast<int64_t>(t.history.size()) + turn.output_tokens > engine.max_model_len()) {
        t.done = true;
        ++totals.traces_cut;
        return {};
    }
    SamplingParams params;
    params.temperature = 0.0f;
    params.ignore_eos = true;
    params.max_tokens = turn.output_tokens;
    for (int32_t attempt = 0;; ++attempt) {
        auto id = engine.add_request(t.history, params,
                                     {.chain_id = flags.chains ? chain_of(t) : std::string()});
        if (id.ok()) {
            t.running = *id;
            return {};
        }
        if (id.status().code() != StatusCode::kGone || attempt > 0) return id.status();
        ++t.generation;
        ++totals.chains_gone;
    }
}

void end_turn(Engine& engine, const ReplayFlags& flags, TraceRun& t, const RequestOutput& out,
              ReplayTotals& totals) {
    ++totals.turns;
    totals.prompt_tokens += out.usage.prompt_tokens;
    totals.cached_tokens += out.usage.cached_tokens;
    totals.reused_tokens += out.usage.reused_tokens;
    totals.output_tokens += out.usage.completion_tokens;
    const eval::AgentTurn& turn = t.trace.turns[t.turn];
    t.history.insert(t.history.end(), out.token_ids.begin(), out.token_ids.end());
    const auto tool_begin = static_cast<int32_t>(t.history.size());
    t.history.insert(t.history.end(), turn.tool_result.begin(), turn.tool_result.end());
    t.tool_spans.push_back(
        {.begin = tool_begin, .end = tool_begin + static_cast<int32_t>(turn.tool_result.size())});
    t.running.reset();
    t.ready_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(turn.tool_wait_seconds));
    if (++t.turn == t.trace.turns.size()) {
        t.done = true;
        if (flags.chains) (void)engine.release_chain(chain_of(t));  // the session is over
    }
}

// While the session waits on its tool, prunes the chain's tool results that the next turn will
// see as older than prune_after_turns turns (each once).
Status prune_old_tool_results(Engine& engine, const ReplayFlags& flags, TraceRun& t,
                              std::vector<int64_t>& jobs) {
    if (flags.prune.after_turns <= 0 || t.done) return {};
    const auto next_turn = static_cast<int64_t>(t.turn);
    std::vector<TokenRange> ranges;
    for (; static_cast<int64_t>(t.num_pruned_turns) < next_turn - flags.prune.after_turns;
         ++t.num_pruned_turns) {
        ranges.push_back(t.tool_spans[t.num_pruned_turns]);
    }
    if (ranges.empty()) return {};
    SE_ASSIGN_OR_RETURN(const PrunePolicy policy, parse_prune_policy(flags.prune.policy));
    SE_ASSIGN_OR_RETURN(const int64_t id, engine.submit_prune({.prefix = t.history,
                                                               .chain_id = chain_of(t),
                                                               .ranges = std::move(ranges),
                                                               .keep_ratio = flags.prune.keep_ratio,
                                                               .policy = policy}));
    jobs.push_back(id);
    t.prune_job = id;
    return {};
}

bool prune_pending(const Engine& engine, const TraceRun& t) {
    if (!t.prune_job) return false;
    const std::optional<PruneJobResult> r = engine.prune_job(*t.prune_job);
    return r && (r->state == PruneJobState::kQueued || r->state == PruneJobState::kRunning);
}

// Counts the jobs that ended.
void collect_prune_jobs(const Engine& engine, std::vector<int64_t>& jobs, ReplayTotals& totals) {
    std::erase_if(jobs, [&](int64_t id) {
        const std::optional<PruneJobResult> r = engine.prune_job(id);
        if (!r || r->state == PruneJobState::kQueued || r->state == PruneJobState::kRunning) {
            return false;
        }
        ++totals.prune_jobs;
        totals.prune_blocked += r->state == PruneJobState::kBlocked ? 1 : 0;
        totals.prune_failed += r->state == PruneJobState::kFailed ? 1 : 0;
        totals.pruned_tokens += r->freed;
        totals.prune_eligible += r->tokens_in_ranges;
        return true;
    });
}

Expected<ReplayTotals> replay(Engine& engine, const ReplayFlags& flags) {
    ReplayTotals totals;
    const int64_t prefill_before = engine.stats().prefill_tokens;
    const auto start = Clock::now();
    std::vector<TraceRun> active;
    std::vector<int64_t> prune_jobs;
    int32_t next = 0;
    while (next < flags.num_traces || !active.empty()) {
        while (next < flags.num_traces && static_cast<int32_t>(active.size()) < flags.concurrency) {
            TraceRun& t = active.emplace_back();
            t.index = next;
            t.trace = eval::make_agent_trace(flags.trace, next++);
            t.history = t.trace.opening;
            t.ready_at = Clock::now();
        }
        for (TraceRun& t : active) {
            if (!t.done && !t.running && t.ready_at <= Clock::now() && !prune_pending(engine, t)) {
                SE_RETURN_IF_ERROR(start_turn(engine, flags, t, totals));
            }
        }
        if (engine.has_work()) {
            engine.step();
        } else {  // every session waits on a tool
            Clock::time_point wake = Clock::now() + std::chrono::milliseconds(10);
            for (const TraceRun& t : active) {
                if (!t.done) wake = std::min(wake, t.ready_at);
            }
            std::this_thread::sleep_until(wake);
        }
        for (const RequestOutput& out : engine.take_finished()) {
            if (!out.error.ok()) return out.error;
            auto t = std::find_if(active.begin(), active.end(),
                                  [&](const TraceRun& r) { return r.running == out.id; });
            SE_CHECK(t != active.end(), "an output no trace waits for");
            end_turn(engine, flags, *t, out, totals);
            SE_RETURN_IF_ERROR(prune_old_tool_results(engine, flags, *t, prune_jobs));
        }
        collect_prune_jobs(engine, prune_jobs, totals);
        std::erase_if(active, [](const TraceRun& t) { return t.done; });
    }
    totals.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    totals.prefill_tokens = engine.stats().prefill_tokens - prefill_before;
    return totals;
}

void print_report(const ReplayFlags& flags, const Engine& engine, const ReplayTotals& r) {
    const double tok_s = r.seconds > 0 ? static_cast<double>(r.output_tokens) / r.seconds : 0.0;
    if (flags.output == "json") {
        const nlohmann::ordered_json j = {{"method", flags.engine.sparse_method},
                                          {"sparse_config", engine.config().sparse_config},
                                          {"prefix_caching", engine.config().enable_prefix_caching},
                                          {"chains", flags.chains},
                                          {"traces", flags.num_traces},
                                          {"concurrency", flags.concurrency},
                                          {"threads", flags.engine.threads},
                                          {"seed", flags.engine.seed},
                                          {"turns", r.turns},
                                          {"traces_cut", r.traces_cut},
                                          {"chains_gone", r.chains_gone},
                                          {"prune_after_turns", flags.prune.after_turns},
                                          {"prune_keep_ratio", flags.prune.keep_ratio},
                                          {"prune_policy", flags.prune.policy},
                                          {"prune_jobs", r.prune_jobs},
                                          {"prune_blocked", r.prune_blocked},
                                          {"prune_failed", r.prune_failed},
                                          {"prune_eligible_tokens", r.prune_eligible},
                                          {"pruned_tokens", r.pruned_tokens},
                                          {"prompt_tokens", r.prompt_tokens},
                                          {"prefill_tokens", r.prefill_tokens},
                                          {"cached_tokens", r.cached_tokens},
                                          {"reused_tokens", r.reused_tokens},
                                          {"output_tokens", r.output_tokens},
                                          {"seconds", r.seconds},
                                          {"output_tokens_per_second", tok_s}};
        fmt::print("{}\n", j.dump());
        return;
    }
    fmt::print(
        "| method | prefix cache | chains | turns | prompt tok | prefilled | reused | pruned | "
        "output tok/s | seconds |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |\n");
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} |\n",
               flags.engine.sparse_method, engine.config().enable_prefix_caching ? "on" : "off",
               flags.chains ? "on" : "off", r.turns, r.prompt_tokens, r.prefill_tokens,
               r.cached_tokens, r.pruned_tokens, tok_s, r.seconds);
}

Status check_flags(const ReplayFlags& f) {
    const eval::AgentTraceOptions& t = f.trace;
    if (f.num_traces < 1 || f.concurrency < 1 || t.num_turns < 1) {
        return invalid_argument("--traces, --concurrency and --turns must be >= 1");
    }
    if (t.min_output_tokens < 1 || t.min_output_tokens > t.max_output_tokens) {
        return invalid_argument("--output-tokens: need 1 <= min <= max");
    }
    if (t.min_tool_tokens < 1 || t.min_tool_tokens > t.max_tool_tokens) {
        return invalid_argument("--tool-tokens: need 1 <= min <= max");
    }
    if (t.system_tokens < 0 || t.task_tokens < 1 || t.max_tool_wait_seconds < 0) {
        return invalid_argument(
            "--system-tokens must be >= 0, --task-tokens >= 1, --max-tool-wait >= 0");
    }
    SE_RETURN_IF_ERROR(check_prune_flags(f.prune));
    if (f.prune.after_turns > 0 && !f.chains) {
        return invalid_argument(
            "--prune-after-turns needs --chains (it prunes each chain's state)");
    }
    if (f.output != "md" && f.output != "json") {
        return invalid_argument(fmt::format("--output must be md or json, not '{}'", f.output));
    }
    return {};
}

int run_replay(ReplayFlags flags) {
    if (Status s = check_flags(flags); !s.ok()) {
        report_error(s);
        return 2;
    }
    auto started = start_engine(flags.engine);
    if (!started.ok()) return report_error(started.status());
    Engine& engine = **started;
    // Ordinary tokens: above the first 256 ids, where tokenizers keep special and byte tokens.
    flags.trace.seed = flags.engine.seed;
    flags.trace.token_lo = std::min(256, engine.model_config().vocab_size / 2);
    flags.trace.token_hi = engine.model_config().vocab_size;
    auto totals = replay(engine, flags);
    if (!totals.ok()) return report_error(totals.status());
    print_report(flags, engine, *totals);
    return 0;
}

}  // namespace

void add_replay_command(CLI::App& app, std::function<int()>& run) {
    auto flags = std::make_shared<ReplayFlags>();
    CLI::App* cmd = app.add_subcommand(
        "replay",
        "replay synthetic agent sessions (shared system prompt, task, then turns of model "
        "output + tool result) and report prefilled tokens and throughput");
    add_engine_flags(*cmd, flags->engine);
    eval::AgentTraceOptions& t = flags->trace;
    cmd->add_option("--traces", flags->num_traces, "sessions to replay")->capture_default_str();
    cmd->add_option("--concurrency", flags->concurrency, "sessions running at once")
        ->capture_default_str();
    cmd->add_flag("--chains", flags->chains,
                  "each session's turns continue one Chain Cache chain (evicting methods)");
    add_prune_flags(*cmd, flags->prune, "tool result", "--chains");
    cmd->add_option("--turns", t.num_turns, "turns per session")->capture_default_str();
    cmd->add_option("--system-tokens", t.system_tokens, "system prompt, shared by all sessions")
        ->capture_default_str();
    cmd->add_option("--task-tokens", t.task_tokens, "each session's task")->capture_default_str();
    cmd->add_option("--min-output-tokens", t.min_output_tokens)->capture_default_str();
    cmd->add_option("--max-output-tokens", t.max_output_tokens)->capture_default_str();
    cmd->add_option("--min-tool-tokens", t.min_tool_tokens)->capture_default_str();
    cmd->add_option("--max-tool-tokens", t.max_tool_tokens)->capture_default_str();
    cmd->add_option("--max-tool-wait", t.max_tool_wait_seconds, "seconds a tool takes at most")
        ->capture_default_str();
    cmd->add_option("-o,--output", flags->output, "md | json")->capture_default_str();
    cmd->callback([flags, &run] { run = [flags] { return run_replay(*flags); }; });
}

}  // namespace se::cli
