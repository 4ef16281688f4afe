// Operations on cached prefixes: inspect, delete a subtree, eviction priority, and
// Prefix-Cache Pruning jobs (engine/prune_job.h).
#include <fmt/core.h>

#include <algorithm>

#include "engine/engine.h"
#include "engine/prune_scorer.h"
#include "kv/prefix_pruner.h"
#include "sparse/full_cache_manager.h"

namespace se {
namespace {

// Bounded history of finished jobs: the oldest results are forgotten first.
constexpr size_t kMaxPruneResults = 4096;

// The instruction the reconstruction policy replays the context after.
constexpr std::string_view kRepeatInstruction = "\n\nRepeat the previous context exactly.\n";

}  // namespace

Expected<RadixCache*> Engine::prefix_cache() const {
    RadixCache* radix = method_.cache->radix_cache();
    if (radix == nullptr) {
        return failed_precondition(fmt::format(
            "method {} keeps no prefix cache here (an evicting method, or prefix caching off)",
            config_.sparse_method));
    }
    return radix;
}

Expected<RadixInspection> Engine::inspect_prefix(std::span<const int32_t> tokens,
                                                 const std::string& cache_salt) const {
    SE_ASSIGN_OR_RETURN(RadixCache * radix, prefix_cache());
    return radix->inspect(cache_namespace(cache_salt), tokens);
}

Expected<int32_t> Engine::on_every_prefix_cache(
    const std::function<Expected<int32_t>(RadixCache&)>& op) {
    SE_ASSIGN_OR_RETURN(RadixCache * radix, prefix_cache());
    Expected<int32_t> first = op(*radix);
    if (tp_size() == 1) return first;
    // Every rank holds its own copy of the prefix cache (its KV heads); they change together.
    for (int32_t r = 1; r < tp_size(); ++r) {
        const Expected<int32_t> other = op(*rank_cache(r).radix_cache());
        SE_CHECK(other.ok() == first.ok() && (!first.ok() || other.value() == first.value()),
                 "tensor-parallel ranks diverged: rank %d's prefix cache answered differently", r);
    }
    return first;
}

Expected<int32_t> Engine::delete_prefix_subtree(std::span<const int32_t> tokens,
                                                const std::string& cache_salt) {
    const uint64_t ns = cache_namespace(cache_salt);
    auto removed =
        on_every_prefix_cache([&](RadixCache& radix) { return radix.delete_subtree(ns, tokens); });
    refresh_gauges();
    return removed;
}

Expected<int32_t> Engine::set_prefix_priority(std::span<const int32_t> tokens,
                                              const std::string& cache_salt,
                                              EvictionPriority priority) {
    const uint64_t ns = cache_namespace(cache_salt);
    return on_every_prefix_cache(
        [&](RadixCache& radix) { return radix.set_priority(ns, tokens, priority); });
}

Expected<int64_t> Engine::submit_prune(PruneJobRequest request) {
    const bool chain = !request.chain_id.empty();
    if (chain && !method_.cache->supports_chains()) {
        return failed_precondition(fmt::format(
            "chain_id: method {} keeps no chains (chain pruning is for methods that evict)",
            config_.sparse_method));
    }
    if (!ops_->host_memory()) {
        return failed_precondition(fmt::format(
            "pruning scores cached keys on the host; the {} backend keeps them on the device "
            "(use --device cpu for pruning)",
            ops_->name()));
    }
    if (!chain && !method_.cache->supports_pruning()) {
        return failed_precondition(
            fmt::format("method {} does not support prefix-cache pruning (a method that keeps and "
                        "reads its whole history, with prefix caching on, does; "
                        "methods that evict prune a chain: give chain_id)",
                        config_.sparse_method));
    }
    if (request.observation_tokens < 1 || request.score_chunk_size < 1 ||
        request.prev_postfix_size < 0) {
        return invalid_argument(
            "observation_tokens and score_chunk_size must be >= 1, prev_postfix_size >= 0");
    }
    // The range checks that need no cache state, now (a bad request is refused, not queued).
    auto checked =
        align_prune_ranges({.prefix_tokens = static_cast<int32_t>(request.prefix.size()),
                            .block_size = chain ? 1 : method_.cache->capacity().block_size,
                            .ranges = request.ranges,
                            .keep_tokens = request.keep_tokens,
                            .keep_ratio = request.keep_ratio});
    if (!checked.ok()) return checked.status();
    const int64_t id = next_prune_id_++;
    prune_jobs_[id] = {.id = id};
    prune_queue_.emplace_back(id, std::move(request));
    while (prune_jobs_.size() > kMaxPruneResults &&
           prune_jobs_.begin()->second.state != PruneJobState::kQueued) {
        prune_jobs_.erase(prune_jobs_.begin());
    }
    return id;
}

std::optional<PruneJobResult> Engine::prune_job(int64_t id) const {
    auto it = prune_jobs_.find(id);
    if (it == prune_jobs_.end()) return std::nullopt;
    return it->second;
}

void Engine::run_prune_job() {
    auto [id, request] = std::move(prune_queue_.front());
    prune_queue_.pop_front();
    PruneJobResult& result = prune_jobs_[id];
    result.id = id;
    result.state = PruneJobState::kRunning;
    if (Status s = prune(request, result); !s.ok()) {
        result.state = PruneJobState::kFailed;
        result.message = s.message();
    } else if (result.state == PruneJobState::kRunning) {
        result.state = PruneJobState::kCompleted;
    }
    switch (result.state) {
        case PruneJobState::kCompleted:
            metrics_.prune_jobs[0].inc();
            metrics_.prune_freed_tokens.inc(result.freed);
            break;
        case PruneJobState::kBlocked:
            metrics_.prune_jobs[1].inc();
            break;
        case PruneJobState::kFailed:
            metrics_.prune_jobs[2].inc();
            break;
        case PruneJobState::kQueued:
        case PruneJobState::kRunning:
            SE_CHECK(false, "a prune job ended %s", prune_job_state_name(result.state).data());
    }
    refresh_gauges();
}

Status Engine::prune(const PruneJobRequest& request, PruneJobResult& result) {
    return request.chain_id.empty() ? prune_prefix(request, result) : prune_chain(request, result);
}

Status Engine::prune_prefix(const PruneJobRequest& request, PruneJobResult& result) {
    const int32_t bs = method_.cache->capacity().block_size;
    const auto whole = static_cast<size_t>(request.prefix.size() / bs * bs);
    // Each rank's prefix cache and store (its KV heads); rank 0's decides, every rank applies.
    auto full_cache = [&](int32_t r) -> FullCacheManager& {
        return dynamic_cast<FullCacheManager&>(rank_cache(r));
    };
    auto target_of = [&](int32_t r) {
        return PrefixPruneTarget{.radix = *full_cache(r).radix_cache(),
                                 .store = full_cache(r).mutable_kv(),
                                 .ops = rank_ops(r),
                                 .ns = cache_namespace(request.cache_salt),
                                 .tokens = std::span(request.prefix).first(whole)};
    };
    const PrefixPruneTarget target = target_of(0);
    auto pruned = pruned_blocks(target);
    if (!pruned.ok()) return not_found(pruned.status().message());
    SE_ASSIGN_OR_RETURN(PrunePlan plan,
                        align_prune_ranges({.prefix_tokens = static_cast<int32_t>(whole),
                                            .block_size = bs,
                                            .ranges = request.ranges,
                                            .keep_tokens = request.keep_tokens,
                                            .keep_ratio = request.keep_ratio,
                                            .pruned_blocks = std::move(pruned).value()}));
    result.ranges = plan.ranges;
    result.shrunk = plan.shrunk;
    result.tokens_in_ranges = plan.eligible;
    result.already_pruned = plan.already_pruned;
    if (Status busy = check_no_reader(target, plan); !busy.ok()) {
        result.state = PruneJobState::kBlocked;
        result.message = busy.message();
        return {};
    }
    if (plan.eligible > 0) {
        std::vector<int32_t> candidates;
        for (const TokenRange& r : plan.ranges) {
            for (int32_t p = r.begin; p < r.end; ++p) candidates.push_back(p);
        }
        // A scoring sequence reads the cached prefix up to `position` (whole blocks).
        auto start = [&](SeqId seq, int32_t position) -> Status {
            const auto tokens = target.tokens.first(static_cast<size_t>(position));
            bool whole_prefix = true;
            for (int32_t r = 0; r < tp_size(); ++r) {
                whole_prefix =
                    full_cache(r).attach_cached(seq, target.ns, tokens) == position && whole_prefix;
            }
            if (whole_prefix) return {};
            method_.cache->release(seq);
            return not_found(fmt::format("the prefix cache lost tokens of [0, {})", position));
        };
        SE_ASSIGN_OR_RETURN(std::vector<float> scores,
                            score_for_prune(request, {.tokens = target.tokens,
                                                      .candidates = candidates,
                                                      .window_align = bs,
                                                      .start = start}));
        choose_kept(scores, plan);
        SE_ASSIGN_OR_RETURN(result.blocks_freed, apply_prune(target, plan));
        for (int32_t r = 1; r < tp_size(); ++r) {
            const Expected<int32_t> freed = apply_prune(target_of(r), plan);
            SE_CHECK(freed.ok() && freed.value() == result.blocks_freed,
                     "tensor-parallel ranks diverged: pruning rank %d's prefix cache", r);
        }
    }
    result.kept = plan.keep;
    result.freed = plan.freed();
    return {};
}

Status Engine::prune_chain(const PruneJobRequest& request, PruneJobResult& result) {
    auto idle = chains_->idle(request.chain_id, request.prefix);
    if (!idle.ok()) {
        if (idle.status().code() != StatusCode::kFailedPrecondition) return idle.status();
        result.state = PruneJobState::kBlocked;
        result.message = "blocked: " + idle.status().message();
        return {};
    }
    const IdleChain chain = idle.value();
    SE_ASSIGN_OR_RETURN(PrunePlan plan, align_prune_ranges({.prefix_tokens = chain.processed,
                                                            .block_size = 1,
                                                            .ranges = request.ranges,
                                                            .keep_tokens = request.keep_tokens,
                                                            .keep_ratio = request.keep_ratio}));
    // Eligible: the positions of the ranges some layer still holds.
    std::vector<int32_t> candidates;
    for (int32_t layer = 0; layer < loaded_.config.num_layers; ++layer) {
        ResidentKeys keys;
        if (!method_.cache->resident_keys(chain.owner, layer, keys)) {
            return failed_precondition(fmt::format(
                "method {} keeps a set of entries per KV head; chain pruning needs one set per "
                "layer",
                config_.sparse_method));
        }
        for (int32_t p : keys.positions) {
            const bool in_range =
                std::any_of(plan.ranges.begin(), plan.ranges.end(),
                            [&](const TokenRange& r) { return p >= r.begin && p < r.end; });
            if (in_range) candidates.push_back(p);
        }
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    const auto eligible = static_cast<int32_t>(candidates.size());
    result.ranges = plan.ranges;
    result.already_pruned = plan.eligible - eligible;
    result.tokens_in_ranges = eligible;
    plan.eligible = eligible;
    plan.keep = std::min(eligible, request.keep_tokens
                                       ? *request.keep_tokens
                                       : static_cast<int32_t>(eligible * *request.keep_ratio));
    if (eligible > 0) {
        auto start = [&](SeqId seq, int32_t position) {
            return method_.cache->fork_prefix(chain.owner, seq, position);
        };
        const auto history = std::span(request.prefix).first(static_cast<size_t>(chain.processed));
        SE_ASSIGN_OR_RETURN(
            std::vector<float> scores,
            score_for_prune(
                request,
                {.tokens = history, .candidates = candidates, .window_align = 1, .start = start}));
        choose_kept_among(candidates, scores, plan);
        const int32_t free_before = method_.cache->capacity().num_free_blocks;
        method_.cache->drop_positions(chain.owner, plan.dropped);
        result.blocks_freed = method_.cache->capacity().num_free_blocks - free_before;
        chains_->resize(request.chain_id, method_.cache->oracle().release_gain(chain.owner));
    }
    result.kept = plan.keep;
    result.freed = eligible - plan.keep;
    return {};
}

Expected<std::vector<float>> Engine::score_for_prune(const PruneJobRequest& request,
                                                     const PruneScoring& s) {
    // Every rank scores with its own heads (the pass runs the whole model, so all ranks run it
    // together); a candidate's score is the max over layers and heads, so the max over the
    // ranks' scores is exactly what one rank of the whole model would score.
    const auto num_candidates = s.candidates.size();
    std::vector<std::vector<float>> rank_scores(static_cast<size_t>(tp_size()),
                                                std::vector<float>(num_candidates, 0.0f));
    const auto n = static_cast<int32_t>(s.tokens.size());
    const SeqId seq = next_id_++;
    // One pass: a sequence started on the state before `context_len`, then the queries.
    auto pass = [&](int32_t context_len, std::span<const int32_t> queries, size_t first,
                    size_t count, RowReduction rows) -> Status {
        SE_RETURN_IF_ERROR(s.start(seq, context_len));
        Status run = for_each_rank([&](int32_t r) {
            PruneScorer scorer(rank_model(r), rank_controller(r), rank_cache(r));
            return scorer.run({.seq = seq,
                               .context_len = context_len,
                               .queries = queries,
                               .candidates = s.candidates.subspan(first, count),
                               .rows = rows},
                              std::span(rank_scores[static_cast<size_t>(r)]).subspan(first, count));
        });
        method_.cache->release(seq);
        return run;
    };
    auto scores = [&] {
        std::vector<float> best = rank_scores.front();
        for (const std::vector<float>& other : rank_scores) {
            for (size_t k = 0; k < num_candidates; ++k) best[k] = std::max(best[k], other[k]);
        }
        return best;
    };
    if (request.policy == PrunePolicy::kObservationWindow) {
        // The window: the last observation_tokens of the state (from an aligned start), after
        // every candidate.
        const int32_t after = s.candidates.back() + 1;
        const int32_t aligned_after =
            (after + s.window_align - 1) / s.window_align * s.window_align;
        const int32_t start = std::max(
            aligned_after, (n - request.observation_tokens) / s.window_align * s.window_align);
        if (start >= n) {
            return invalid_argument(fmt::format(
                "no observation window: the ranges reach the end of the {} cached tokens; leave "
                "some after them",
                n));
        }
        SE_RETURN_IF_ERROR(
            pass(start, s.tokens.subspan(start), 0, s.candidates.size(), RowReduction::kMean));
        return scores();
    }
    // kReconstruction: the state replayed after the instruction, in chunks of candidates, each with
    // a little of what came before it.
    std::vector<int32_t> instruction;
    if (tokenizer_) {
        SE_ASSIGN_OR_RETURN(instruction,
                            tokenizer_->encode(kRepeatInstruction, {.add_special_tokens = false}));
    }
    for (size_t first = 0; first < s.candidates.size();) {
        const int32_t begin = s.candidates[first];
        size_t count = 0;
        while (first + count < s.candidates.size() &&
               s.candidates[first + count] < begin + request.score_chunk_size) {
            ++count;
        }
        const int32_t end = s.candidates[first + count - 1] + 1;
        std::vector<int32_t> queries = instruction;
        queries.insert(queries.end(),
                       s.tokens.begin() + std::max(0, begin - request.prev_postfix_size),
                       s.tokens.begin() + end);
        SE_RETURN_IF_ERROR(pass(n, queries, first, count, RowReduction::kMax));
        first += count;
    }
    return scores();
}

}  // namespace se
