// Test-only: one method under tensor parallelism, every rank a ContractDriver on a thread of its
// own, as the engine runs its ranks. Rank r of N holds query heads [r H / N, (r + 1) H / N) and KV
// heads [r Hk / N, (r + 1) Hk / N) of the model DriverOptions describe (its method created from
// that shard and the rank's communicator); each step hands every rank its heads' columns of the
// whole model's inputs, all ranks at once. Tests compare the ranks' decisions with each other and
// with a single-rank driver of the whole model fed the same inputs.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "backend/communicator.h"
#include "support/methods/contract_driver.h"

namespace se::testing {

class ShardedDrivers {
  public:
    // `size` ranks of `method` over the model of `whole` (heads divisible by size), each with
    // 1 / size of its KV memory and decisions recorded.
    ShardedDrivers(const std::string& method, const nlohmann::json& knobs, DriverOptions whole,
                   int32_t size);

    int32_t size() const { return static_cast<int32_t>(drivers_.size()); }
    ContractDriver& rank(int32_t r) { return *drivers_.at(static_cast<size_t>(r)); }

    // Runs the step on every rank at once, rank r given its columns of `layers` (inputs of the
    // whole model). Returns each rank's outputs: [rank][layer] f32 [n, its heads * head_dim].
    std::vector<std::vector<std::vector<float>>> step(const StepPlan& plan,
                                                      const std::vector<LayerInputs>& layers);

  private:
    DriverOptions whole_;
    std::vector<std::unique_ptr<Communicator>> comms_;
    std::vector<std::unique_ptr<ContractDriver>> drivers_;
};

// Rank `rank` of `size`'s columns of the whole model's inputs (num_heads, num_kv_heads heads).
std::vector<LayerInputs> shard_inputs(const std::vector<LayerInputs>& layers,
                                      const DriverOptions& whole, int32_t rank, int32_t size);

// A step's decisions as rows of integers, to compare: per layer its selection {kind,
// granularity, then per pick: all, count, ids...}, then per compaction {-1, seq, lane, keep...}.
std::vector<std::vector<int32_t>> decision_rows(const StepDecisions& step);

// Expects `got` to have decided exactly what `want` did, step by step (`who` names got).
void expect_same_decisions(const std::vector<StepDecisions>& want,
                           const std::vector<StepDecisions>& got, const std::string& who);

// Expects every rank's EvictingCacheManager to be in lockstep with single's for `seqs`: per lane
// the same entry positions and block table, and as many free blocks (for token-shared lanes,
// which every rank holds alike).
void expect_lockstep_lanes(ContractDriver& single, ShardedDrivers& ranks,
                           const std::vector<SeqId>& seqs);

// Compactions over all steps of `decisions` (to show a test evicted something).
int32_t num_compactions(const std::vector<StepDecisions>& decisions);

}  // namespace se::testing
