// Operations on cached prefixes: inspect, delete a subtree, eviction priority, and
// Prefix-Cache Pruning jobs (engine/prune_job.h).
#include <fmt/core.h>

#include <algorithm>

#include "engine/engine.h"
#include "engine/prune_scorer.h"
#include "kv/prefix_pruner.h"

namespace se {
namespace {

// Bounded history of finished jobs: the oldest results are forgotten first.
constexpr size_t kMaxPruneResults = 4096;

// The instruction KVzip replays the context after.
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

Expected<int32_t> Engine::delete_prefix_subtree(std::span<const int32_t> tokens,
                                                const std::string& cache_salt) {
    SE_ASSIGN_OR_RETURN(RadixCache * radix, prefix_cache());
    auto removed = radix->delete_subtree(cache_namespace(cache_salt), tokens);
    refresh_gauges();
    return removed;
}

Expected<int32_t> Engine::set_prefix_priority(std::span<const int32_t> tokens,
                                              const std::string& cache_salt,
                                              EvictionPriority priority) {
    SE_ASSIGN_OR_RETURN(RadixCache * radix, prefix_cache());
    return radix->set_priority(cache_namespace(cache_salt), tokens, priority);
}

Expected<int64_t> Engine::submit_prune(PruneJobRequest request) {
    if (!method_.cache->supports_pruning()) {
        return failed_precondition(fmt::format(
            "method {} does not support prefix-cache pruning (dense with prefix caching does)",
            config_.sparse_method));
    }
    if (request.observation_tokens < 1 || request.score_chunk_size < 1 ||
        request.prev_postfix_size < 0) {
        return invalid_argument(
            "observation_tokens and score_chunk_size must be >= 1, prev_postfix_size >= 0");
    }
    // The range checks that need no cache state, now (a bad request is refused, not queued).
    auto checked = align_prune_ranges({.prefix_tokens = static_cast<int32_t>(request.prefix.size()),
                                       .block_size = method_.cache->capacity().block_size,
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
    refresh_gauges();
}

Status Engine::prune(const PruneJobRequest& request, PruneJobResult& result) {
    auto& cache = dynamic_cast<FullCacheManager&>(*method_.cache);
    const int32_t bs = cache.capacity().block_size;
    const auto whole = static_cast<size_t>(request.prefix.size() / bs * bs);
    const PrefixPruneTarget target{.radix = *cache.radix_cache(),
                                   .store = cache.mutable_kv(),
                                   .ops = *ops_,
                                   .ns = cache_namespace(request.cache_salt),
                                   .tokens = std::span(request.prefix).first(whole)};
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
        SE_ASSIGN_OR_RETURN(std::vector<float> scores, score_for_prune(request, target, plan));
        choose_kept(scores, plan);
        SE_ASSIGN_OR_RETURN(result.blocks_freed, apply_prune(target, plan));
    }
    result.kept = plan.keep;
    result.freed = plan.freed();
    return {};
}

Expected<std::vector<float>> Engine::score_for_prune(const PruneJobRequest& request,
                                                     const PrefixPruneTarget& target,
                                                     const PrunePlan& plan) {
    auto& cache = dynamic_cast<FullCacheManager&>(*method_.cache);
    PruneScorer scorer(*model_, *controller_, cache);
    const int32_t bs = cache.capacity().block_size;
    const auto n = static_cast<int32_t>(target.tokens.size());
    std::vector<int32_t> candidates;
    for (const TokenRange& r : plan.ranges) {
        for (int32_t p = r.begin; p < r.end; ++p) candidates.push_back(p);
    }
    std::vector<float> scores(candidates.size(), 0.0f);
    const SeqId seq = next_id_++;
    if (request.policy == PrunePolicy::kSnapKvGlobal) {
        // The window: the last observation_tokens of the prefix (from a block start), never
        // reaching into a range.
        const int32_t last_end = plan.ranges.back().end;
        const int32_t start = std::max(last_end, (n - request.observation_tokens) / bs * bs);
        if (start >= n) {
            return invalid_argument(fmt::format(
                "no observation window: the ranges reach the end of the cached prefix ({} "
                "tokens); leave at least one block after them",
                n));
        }
        SE_RETURN_IF_ERROR(scorer.run(seq,
                                      {.ns = target.ns,
                                       .context = target.tokens.first(start),
                                       .queries = target.tokens.subspan(start),
                                       .candidates = candidates,
                                       .rows = RowReduction::kMean},
                                      scores));
        return scores;
    }
    // kvzip_global: replay each range in chunks after the instruction, with a little of what
    // came before it.
    std::vector<int32_t> instruction;
    if (tokenizer_) {
        SE_ASSIGN_OR_RETURN(instruction,
                            tokenizer_->encode(kRepeatInstruction, {.add_special_tokens = false}));
    }
    size_t first = 0;
    for (const TokenRange& r : plan.ranges) {
        for (int32_t begin = r.begin; begin < r.end; begin += request.score_chunk_size) {
            const int32_t end = std::min(r.end, begin + request.score_chunk_size);
            const int32_t from = std::max(0, begin - request.prev_postfix_size);
            std::vector<int32_t> queries = instruction;
            queries.insert(queries.end(), target.tokens.begin() + from,
                           target.tokens.begin() + end);
            const auto count = static_cast<size_t>(end - begin);
            SE_RETURN_IF_ERROR(
                scorer.run(seq,
                           {.ns = target.ns,
                            .context = target.tokens,
                            .queries = queries,
                            .candidates = std::span(candidates).subspan(first, count),
                            .rows = RowReduction::kMax},
                           std::span(scores).subspan(first, count)));
            first += count;
        }
    }
    return scores;
}

}  // namespace se
