// Test-only: the reference side of masked-dense oracle tests. Records every token's K and V per
// (sequence, layer) by position as a test feeds them to ContractDriver, and computes plain
// softmax attention over a chosen set of positions, in double.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "support/methods/contract_driver.h"

namespace se::testing {

class TokenHistory {
  public:
    TokenHistory(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim);

    // Appends the step's new rows (plan order) of every layer's inputs.
    void record(const StepPlan& plan, const std::vector<LayerInputs>& inputs);
    // Starts `to` with the first `count` tokens of `from` (a prefix-cache hit).
    void copy_prefix(SeqId from, SeqId to, int32_t count);

    int32_t length(SeqId seq) const;
    // f32 [head_dim]: the key (value) of `kv_head` at `pos` of `seq` in `layer`.
    const float* key(SeqId seq, int32_t layer, int32_t pos, int32_t kv_head) const;
    const float* value(SeqId seq, int32_t layer, int32_t pos, int32_t kv_head) const;

    // softmax(scale * q . k_j) v_j over j in `positions`, for one query head's q f32 [head_dim]
    // reading `kv_head`.
    std::vector<double> attend(SeqId seq, int32_t layer, const float* q, int32_t kv_head,
                               std::span<const int32_t> positions, float scale) const;

  private:
    struct Rows {
        std::vector<std::vector<float>> k;  // per layer f32 [len, num_kv_heads * head_dim]
        std::vector<std::vector<float>> v;
    };

    int32_t num_layers_ = 0;
    int32_t num_kv_heads_ = 0;
    int32_t head_dim_ = 0;
    std::map<SeqId, Rows> seqs_;
};

}  // namespace se::testing
