// What the scheduler asks before it plans a step: how many KV blocks things cost. Each method
// answers for its own representation (a dense cache grows a block every block_size tokens; an
// eviction method's cost is bounded by its budget), so the scheduler never computes KV sizes.
// Every query is pure: asking changes nothing.
#pragma once

#include <cstdint>
#include <span>

#include "kv/paged_kv_store.h"

namespace se {

// A request's tokens and the prefix-cache namespace they may be found under.
struct PrefixQuery {
    uint64_t ns = 0;
    std::span<const int32_t> tokens;  // every token the sequence will compute KV for
};

struct AdmissionCost {
    int32_t hit_tokens = 0;   // tokens whose KV a cache already holds (they are not recomputed)
    int32_t first_chunk = 0;  // tokens the first step computes
    int64_t blocks = 0;       // blocks the first step takes from available_blocks()
};

class MemoryOracle {
  public:
    virtual ~MemoryOracle() = default;

    // Blocks that new work can have now: free blocks plus blocks a cache could give back.
    virtual int64_t available_blocks() const = 0;

    // Whether a request of `num_tokens` tokens (prompt + most it may generate) can ever fit.
    virtual bool fits_alone(int64_t num_tokens) const = 0;

    // Admitting a waiting sequence whose first step computes at most `max_chunk` tokens after
    // any cached prefix.
    virtual AdmissionCost admission_cost(const PrefixQuery& query, int32_t max_chunk) const = 0;

    // Blocks a running sequence's step of `num_new_tokens` tokens takes.
    virtual int64_t step_cost(SeqId seq, int32_t num_new_tokens) const = 0;

    // Blocks that releasing `seq` (preempting it) would make available.
    virtual int64_t release_gain(SeqId seq) const = 0;
};

}  // namespace se
