// Test-only: a ContractDriver stepped through ragged chunked prefill and decode on random data,
// with every token's K/V recorded (TokenHistory), and the masked-dense oracle: each output row
// equals plain softmax attention over exactly the positions a naive rule says the row reads.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/methods/contract_driver.h"
#include "support/methods/token_history.h"

namespace se::testing {

struct SessionStep {
    StepPlan plan;
    std::vector<LayerInputs> inputs;
    std::vector<std::vector<float>> outs;  // per layer f32 [n, num_heads * head_dim]
};

// The positions the decode row of `seq` (its query at q, f32 [num_heads * head_dim]) reads in
// `layer` by the test's rule; nullopt to skip the check (a near tie the rule cannot settle).
using ReadRule =
    std::function<std::optional<std::vector<int32_t>>(SeqId seq, int32_t layer, const float* q)>;

class DriverSession {
  public:
    // Aborts (the test's setup is wrong) when the driver refuses the knobs.
    DriverSession(const std::string& method, const nlohmann::json& knobs, DriverOptions options);

    ContractDriver& driver() { return *driver_; }
    const DriverOptions& options() const { return options_; }
    TokenHistory& history() { return history_; }

    // One step on fresh random inputs, recorded before it runs.
    SessionStep run(StepPlan plan);
    // Prefills ids[i] from its recorded length to lengths[i], at most `chunk` tokens per
    // sequence and step, all sequences in every step.
    std::vector<SessionStep> prefill(const std::vector<SeqId>& ids,
                                     const std::vector<int32_t>& lengths, int32_t chunk);
    // One decode step for every sequence of `ids`.
    SessionStep decode(const std::vector<SeqId>& ids);

    // Every prefill row equals causal attention over its sequence's earlier entries (1e-5).
    void expect_causal_reads(const SessionStep& step);
    // Every decode row equals attention over what `rule` names (1e-5); returns the checks the
    // rule skipped.
    int32_t expect_decode_reads(const SessionStep& step, const ReadRule& rule);

  private:
    void expect_row(const SessionStep& step, int32_t row, SeqId seq, int32_t layer,
                    const std::vector<int32_t>& positions);

    std::unique_ptr<ContractDriver> driver_;
    DriverOptions options_;
    TokenHistory history_;
    uint64_t seed_ = 1;
};

}  // namespace se::testing
