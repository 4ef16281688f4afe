// Prefix-Cache Pruning, the KV side: applies a completed PrunePlan (prune_plan.h; the kept
// positions chosen) to a cached prefix in the radix cache. Each aligned range's kept entries are
// compacted, in order, into the first blocks of the range and the range's nodes become one
// pruned segment (radix_cache.h); the blocks left empty return to the pool, so
//
//   blocks freed = range blocks - ceil(kept in range / block_size), summed over the ranges.
//
// Scoring (which positions to keep) happens before, in the engine's prune job.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/ops.h"
#include "core/expected.h"
#include "kv/paged_kv_store.h"
#include "kv/prune_plan.h"
#include "kv/radix_cache.h"

namespace se {

struct PrefixPruneTarget {
    RadixCache& radix;
    PagedKvStore& store;
    Ops& ops;
    uint64_t ns = 0;
    std::span<const int32_t> tokens;  // the cached prefix, whole blocks
};

// Block indices (token position / block_size) of the prefix's nodes pruned already, or
// not_found when the prefix is not wholly cached.
Expected<std::vector<int32_t>> pruned_blocks(const PrefixPruneTarget& target);

// failed_precondition ("blocked") when a sequence reads a block of the plan's ranges; ok
// otherwise. Changes nothing.
Status check_no_reader(const PrefixPruneTarget& target, const PrunePlan& plan);

// Applies `plan` (every range over unpruned nodes, kept chosen) and returns the blocks freed.
// Fails, changing nothing, when the prefix up to the last range is not cached or a range has a
// reader.
Expected<int32_t> apply_prune(const PrefixPruneTarget& target, const PrunePlan& plan);

}  // namespace se
