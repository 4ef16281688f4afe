// What a method's runtime decides to drop at the end of a step: per (sequence, lane) the resident
// entries to keep. A lane is one independently stored set of entries (a layer, or a (layer,
// KV head) pair for methods that keep per-head sets; the cache manager documents its lanes).
// The cache manager applies the plan: it moves the kept entries to the front in order, returns
// the blocks that became empty to the pool, and keeps the logical length unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/paged_kv_store.h"

namespace se {

struct Compaction {
    SeqId seq = 0;
    int32_t lane = 0;
    std::vector<int32_t> keep;  // ascending indices of resident entries
};

struct EvictionPlan {
    std::vector<Compaction> compactions;

    bool empty() const { return compactions.empty(); }
};

}  // namespace se
