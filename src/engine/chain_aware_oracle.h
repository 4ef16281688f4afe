// The method's MemoryOracle as the scheduler sees it beside a Chain Cache: the blocks IDLE chains
// hold count as available, because the engine reclaims idle chains (least recently used first)
// before a step needs their blocks. So planning preempts a running request only when reclaiming
// every idle chain would not make room. Everything else is the method's own answer.
#pragma once

#include "kv/chain_cache.h"
#include "sparse/memory_oracle.h"

namespace se {

class ChainAwareOracle final : public MemoryOracle {
  public:
    ChainAwareOracle(const MemoryOracle& method, const ChainCache& chains)
        : method_(method), chains_(chains) {}

    int64_t available_blocks() const override {
        int64_t blocks = method_.available_blocks();
        for (SeqId owner : chains_.idle_owners()) blocks += method_.release_gain(owner);
        return blocks;
    }
    bool fits_alone(int64_t num_tokens) const override { return method_.fits_alone(num_tokens); }
    AdmissionCost admission_cost(const PrefixQuery& query, int32_t max_chunk) const override {
        return method_.admission_cost(query, max_chunk);
    }
    int64_t step_cost(SeqId seq, int32_t num_new_tokens) const override {
        return method_.step_cost(seq, num_new_tokens);
    }
    int64_t release_gain(SeqId seq) const override { return method_.release_gain(seq); }

  private:
    const MemoryOracle& method_;
    const ChainCache& chains_;
};

}  // namespace se
