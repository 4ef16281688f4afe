#include "kv/prefix_pruner.h"

#include <fmt/core.h>

#include <algorithm>

#include "core/check.h"

namespace se {
namespace {

int32_t prefix_blocks(const PrefixPruneTarget& t) {
    return static_cast<int32_t>(t.tokens.size()) / t.radix.block_size();
}

// Blocks up to the end of the last range: all the plan touches (the blocks after it may have
// left the cache since the plan was made).
int32_t range_blocks(const PrefixPruneTarget& t, const PrunePlan& plan) {
    return plan.ranges.empty() ? 0 : plan.ranges.back().end / t.radix.block_size();
}

}  // namespace

Expected<std::vector<int32_t>> pruned_blocks(const PrefixPruneTarget& t) {
    SE_ASSIGN_OR_RETURN(std::vector<RadixPathNode> path,
                        t.radix.path(t.ns, t.tokens, prefix_blocks(t)));
    std::vector<int32_t> out;
    for (size_t i = 0; i < path.size(); ++i) {
        if (path[i].pruned) out.push_back(static_cast<int32_t>(i));
    }
    return out;
}

Status check_no_reader(const PrefixPruneTarget& t, const PrunePlan& plan) {
    SE_ASSIGN_OR_RETURN(std::vector<RadixPathNode> path,
                        t.radix.path(t.ns, t.tokens, range_blocks(t, plan)));
    const int32_t bs = t.radix.block_size();
    for (const TokenRange& r : plan.ranges) {
        for (int32_t b = r.begin / bs; b < r.end / bs; ++b) {
            if (path.at(b).in_use) {
                return failed_precondition(fmt::format(
                    "blocked: a running request reads block [{}, {}) of the range [{}, {})", b * bs,
                    (b + 1) * bs, r.begin, r.end));
            }
        }
    }
    return {};
}

Expected<int32_t> apply_prune(const PrefixPruneTarget& t, const PrunePlan& plan) {
    SE_RETURN_IF_ERROR(check_no_reader(t, plan));
    SE_ASSIGN_OR_RETURN(std::vector<RadixPathNode> path,
                        t.radix.path(t.ns, t.tokens, range_blocks(t, plan)));
    const int32_t bs = t.radix.block_size();
    int32_t freed = 0;
    auto kept_it = plan.kept.begin();
    for (const TokenRange& r : plan.ranges) {
        std::vector<int32_t> nodes;
        std::vector<int32_t> blocks;  // the range's own blocks, in token order
        for (int32_t b = r.begin / bs; b < r.end / bs; ++b) {
            SE_CHECK(!path[b].pruned, "a prune range covers pruned block %d", b);
            nodes.push_back(path[b].node);
            blocks.push_back(path[b].block);
        }
        std::vector<std::vector<int32_t>> rows(nodes.size());
        std::vector<std::vector<int64_t>> slots(nodes.size());
        std::vector<int64_t> from;
        std::vector<int64_t> to;
        for (; kept_it != plan.kept.end() && *kept_it < r.end; ++kept_it) {
            const int32_t p = *kept_it;
            SE_CHECK(p >= r.begin, "kept position %d outside the plan's ranges", p);
            const int32_t local = p - r.begin;
            const auto k = static_cast<int32_t>(from.size());
            from.push_back(int64_t{blocks[local / bs]} * bs + local % bs);
            to.push_back(int64_t{blocks[k / bs]} * bs + k % bs);
            rows[local / bs].push_back(local % bs);
            slots[local / bs].push_back(to.back());
        }
        // Destinations never pass their sources, so moving in order reads before it writes.
        for (int32_t layer = 0; layer < t.store.num_layers(); ++layer) {
            t.ops.move_kv(t.store.layer_cache(layer), from, to);
        }
        const auto num_kept_blocks = static_cast<size_t>((from.size() + bs - 1) / bs);
        const std::span<const int32_t> segment(blocks.data(), num_kept_blocks);
        t.radix.make_segment(nodes, segment, rows, slots);
        freed += static_cast<int32_t>(blocks.size() - num_kept_blocks);
    }
    return freed;
}

}  // namespace se
