#include "cli/eval_turns.h"

#include <fmt/core.h>

#include <chrono>

namespace se::cli {
namespace {

// Runs one request to its end.
Expected<RequestOutput> run_request(Engine& engine, std::vector<int32_t> prompt, int32_t max_tokens,
                                    const std::string& chain_id) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.max_tokens = max_tokens;
    SE_ASSIGN_OR_RETURN(const RequestId id,
                        engine.add_request(std::move(prompt), params, {.chain_id = chain_id}));
    while (engine.has_work()) {
        engine.step();
        for (RequestOutput& out : engine.take_finished()) {
            if (out.id != id) continue;
            if (!out.error.ok()) return out.error;
            return out;
        }
    }
    return internal_error(fmt::format("request {} never finished", id));
}

// Prunes chunks [first, last) of the history the chain or prefix cache holds now, and waits.
Status prune_chunks(Engine& engine, const EvalTurns& flags, const std::vector<int32_t>& ids,
                    const std::vector<int32_t>& cuts, size_t first, size_t last, int32_t processed,
                    const std::string& chain_id) {
    std::vector<TokenRange> ranges;
    for (size_t j = first; j < last; ++j) {
        ranges.push_back({.begin = j == 0 ? 0 : cuts[j - 1], .end = cuts[j]});
    }
    SE_ASSIGN_OR_RETURN(const PrunePolicy policy, parse_prune_policy(flags.prune.policy));
    SE_ASSIGN_OR_RETURN(
        const int64_t job,
        engine.submit_prune({.prefix = std::vector<int32_t>(ids.begin(), ids.begin() + processed),
                             .chain_id = chain_id,
                             .ranges = std::move(ranges),
                             .keep_ratio = flags.prune.keep_ratio,
                             .policy = policy}));
    while (engine.has_work()) engine.step();
    const PruneJobResult r = *engine.prune_job(job);
    if (r.state != PruneJobState::kCompleted) {
        return internal_error(
            fmt::format("prune job {}: {} ({})", job, prune_job_state_name(r.state), r.message));
    }
    return {};
}

// One sample's session; returns the final turn's output.
Expected<RequestOutput> run_session(Engine& engine, const std::vector<int32_t>& ids,
                                    int32_t max_new_tokens, const EvalTurns& flags,
                                    const std::string& chain_id) {
    const auto n = static_cast<int64_t>(ids.size());
    std::vector<int32_t> cuts;  // chunk j is [cuts[j - 1], cuts[j])
    for (int64_t t = 1; t <= flags.turns; ++t)
        cuts.push_back(static_cast<int32_t>(n * t / flags.turns));
    size_t pruned = 0;
    for (size_t t = 0; t + 1 < cuts.size(); ++t) {
        const std::vector<int32_t> prompt(ids.begin(), ids.begin() + cuts[t]);
        if (auto turn = run_request(engine, prompt, 1, chain_id); !turn.ok()) return turn.status();
        // The next turn, t + 1, sees chunks j < t + 1 - N as older than N turns.
        const int64_t old = static_cast<int64_t>(t) + 1 - flags.prune.after_turns;
        if (flags.prune.after_turns > 0 && old > static_cast<int64_t>(pruned)) {
            SE_RETURN_IF_ERROR(prune_chunks(engine, flags, ids, cuts, pruned,
                                            static_cast<size_t>(old), cuts[t], chain_id));
            pruned = static_cast<size_t>(old);
        }
    }
    auto out = run_request(engine, ids, max_new_tokens, chain_id);
    if (!chain_id.empty()) (void)engine.release_chain(chain_id);
    return out;
}

}  // namespace

Status check_eval_turns(const EvalTurns& t) {
    if (t.turns < 1) return invalid_argument(fmt::format("--turns must be >= 1, not {}", t.turns));
    SE_RETURN_IF_ERROR(check_prune_flags(t.prune));
    if (t.prune.after_turns > 0 && t.turns < 2) {
        return invalid_argument("--prune-after-turns needs --turns >= 2");
    }
    return {};
}

Expected<EvalTaskResult> run_task_in_turns(Engine& engine, const ChatPromptEncoder& encoder,
                                           std::vector<eval::EvalSample> samples,
                                           const EvalTurns& turns) {
    EvalTaskResult result;
    result.task = samples.front().task;
    const bool chains = engine.cache_manager().supports_chains();
    const EngineStats before = engine.stats();
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < samples.size(); ++i) {
        SE_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, encoder.encode(samples[i].prompt));
        const std::string chain_id = chains ? fmt::format("eval-{}-{}", result.task, i) : "";
        SE_ASSIGN_OR_RETURN(const RequestOutput out,
                            run_session(engine, ids, samples[i].max_new_tokens, turns, chain_id));
        EvalSampleResult& r = result.samples.emplace_back();
        r.sample = std::move(samples[i]);
        r.take_answer(out);
    }
    result.record_engine_work(
        before, engine.stats(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return result;
}

}  // namespace se::cli
