#include "kv/prune_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace se {

Expected<PrunePlan> align_prune_ranges(const PruneRequest& r) {
    if (r.block_size < 1) return invalid_argument("block_size must be >= 1");
    if (r.keep_tokens.has_value() == r.keep_ratio.has_value()) {
        return invalid_argument("give exactly one of keep_tokens and keep_ratio");
    }
    if (r.keep_tokens && *r.keep_tokens < 0) {
        return invalid_argument(fmt::format("keep_tokens must be >= 0, got {}", *r.keep_tokens));
    }
    if (r.keep_ratio && !(*r.keep_ratio >= 0.0 && *r.keep_ratio <= 1.0)) {
        return invalid_argument(fmt::format("keep_ratio must be in [0, 1], got {}", *r.keep_ratio));
    }
    if (r.ranges.empty()) return invalid_argument("ranges: give at least one [begin, end)");
    std::vector<TokenRange> sorted = r.ranges;
    std::sort(sorted.begin(), sorted.end(),
              [](const TokenRange& a, const TokenRange& b) { return a.begin < b.begin; });
    PrunePlan plan;
    for (size_t i = 0; i < sorted.size(); ++i) {
        const TokenRange& t = sorted[i];
        if (t.begin < 0 || t.begin > t.end || t.end > r.prefix_tokens) {
            return invalid_argument(
                fmt::format("range [{}, {}) is not inside the cached prefix [0, {})", t.begin,
                            t.end, r.prefix_tokens));
        }
        if (i > 0 && t.begin < sorted[i - 1].end) {
            return invalid_argument(fmt::format("ranges [{}, {}) and [{}, {}) overlap",
                                                sorted[i - 1].begin, sorted[i - 1].end, t.begin,
                                                t.end));
        }
        const int32_t bs = r.block_size;
        const TokenRange aligned{.begin = (t.begin + bs - 1) / bs * bs, .end = t.end / bs * bs};
        plan.shrunk |= !(aligned == t);
        // Split around blocks pruned before.
        int32_t run = aligned.begin;
        for (int32_t p = aligned.begin; p <= aligned.end; p += bs) {
            const bool pruned =
                p < aligned.end &&
                std::binary_search(r.pruned_blocks.begin(), r.pruned_blocks.end(), p / bs);
            if (p < aligned.end && !pruned) continue;
            if (run < p) {
                plan.ranges.push_back({.begin = run, .end = p});
                plan.eligible += p - run;
            }
            if (pruned) plan.already_pruned += bs;
            run = p + bs;
        }
    }
    const int64_t keep = r.keep_tokens
                             ? *r.keep_tokens
                             : static_cast<int64_t>(std::floor(plan.eligible * *r.keep_ratio));
    plan.keep = static_cast<int32_t>(std::min<int64_t>(keep, plan.eligible));
    return plan;
}

void choose_kept(std::span<const float> scores, PrunePlan& plan) {
    std::vector<int32_t> candidates;
    for (const TokenRange& range : plan.ranges) {
        for (int32_t p = range.begin; p < range.end; ++p) candidates.push_back(p);
    }
    SE_CHECK(static_cast<int32_t>(candidates.size()) == plan.eligible,
             "%zu positions in the ranges, %d eligible", candidates.size(), plan.eligible);
    choose_kept_among(candidates, scores, plan);
}

void choose_kept_among(std::span<const int32_t> candidates, std::span<const float> scores,
                       PrunePlan& plan) {
    SE_CHECK(scores.size() == candidates.size(), "%zu scores for %zu positions", scores.size(),
             candidates.size());
    SE_CHECK(plan.keep <= static_cast<int32_t>(candidates.size()));
    std::vector<int32_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    // Highest score first; equal scores: the lower position first (a stable sort keeps order).
    // A NaN score ranks last.
    auto key = [&](int32_t i) {
        return std::isnan(scores[i]) ? -std::numeric_limits<float>::infinity() : scores[i];
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return key(a) > key(b); });
    std::vector<bool> keep(scores.size(), false);
    for (int32_t i = 0; i < plan.keep; ++i) keep[order[i]] = true;
    plan.kept.clear();
    plan.dropped.clear();
    for (size_t i = 0; i < candidates.size(); ++i) {
        (keep[i] ? plan.kept : plan.dropped).push_back(candidates[i]);
    }
}

}  // namespace se
