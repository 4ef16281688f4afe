// Test-only: every token's q, k and v fixed up front, per sequence and layer, so that a test can
// cut any chunking or batching out of the same data (the step's rows are its sequences' new tokens
// in plan order) and a naive reference can read any position. Sequence i of the data is the
// driver's sequence id i + 1.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "support/methods/contract_driver.h"
#include "support/methods/step_plans.h"

namespace se::testing {

class TokenData {
  public:
    // `num_seqs` sequences of up to `max_len` tokens each, N(0, 1).
    TokenData(const ContractDriver& driver, int32_t num_seqs, int32_t max_len, uint64_t seed)
        : num_layers_(driver.config().num_layers),
          q_width_(driver.args().num_heads * driver.args().head_dim),
          kv_width_(driver.args().num_kv_heads * driver.args().head_dim) {
        for (int32_t i = 0; i < num_seqs; ++i) {
            seqs_.push_back(driver.random_inputs(max_len, seed + static_cast<uint64_t>(i)));
        }
    }

    // f32 [num_heads * head_dim], [num_kv_heads * head_dim] rows of one token; writable so tests
    // can plant patterns.
    float* q(int32_t seq, int32_t layer, int32_t pos) {
        return seqs_[seq][layer].q.data() + int64_t{pos} * q_width_;
    }
    float* k(int32_t seq, int32_t layer, int32_t pos) {
        return seqs_[seq][layer].k.data() + int64_t{pos} * kv_width_;
    }
    float* v(int32_t seq, int32_t layer, int32_t pos) {
        return seqs_[seq][layer].v.data() + int64_t{pos} * kv_width_;
    }
    const float* q(int32_t seq, int32_t layer, int32_t pos) const {
        return const_cast<TokenData*>(this)->q(seq, layer, pos);
    }
    const float* k(int32_t seq, int32_t layer, int32_t pos) const {
        return const_cast<TokenData*>(this)->k(seq, layer, pos);
    }
    const float* v(int32_t seq, int32_t layer, int32_t pos) const {
        return const_cast<TokenData*>(this)->v(seq, layer, pos);
    }

    // The inputs of a step: each plan sequence's tokens [num_computed, num_computed + new).
    std::vector<LayerInputs> step_inputs(const StepPlan& plan) const {
        std::vector<LayerInputs> out(static_cast<size_t>(num_layers_));
        for (const StepSeq& s : plan.seqs) {
            const auto& seq = seqs_[s.seq_id - 1];
            const int64_t first = s.num_computed_tokens;
            const int64_t last = first + s.num_new_tokens;
            for (int32_t l = 0; l < num_layers_; ++l) {
                append(out[l].q, seq[l].q, first * q_width_, last * q_width_);
                append(out[l].k, seq[l].k, first * kv_width_, last * kv_width_);
                append(out[l].v, seq[l].v, first * kv_width_, last * kv_width_);
            }
        }
        return out;
    }

  private:
    static void append(std::vector<float>& to, const std::vector<float>& from, int64_t begin,
                       int64_t end) {
        to.insert(to.end(), from.begin() + begin, from.begin() + end);
    }

    int32_t num_layers_ = 0;
    int64_t q_width_ = 0;
    int64_t kv_width_ = 0;
    std::vector<std::vector<LayerInputs>> seqs_;  // [seq][layer] rows by position
};

// Prefills sequences of `lens` tokens in chunks of at most `chunk`, every unfinished sequence in
// each step; sequence i joins at step starts[i] (0 when starts is empty).
inline void prefill(ContractDriver& driver, const TokenData& data, const std::vector<int32_t>& lens,
                    int32_t chunk, const std::vector<int32_t>& starts = {}) {
    std::vector<int32_t> done(lens.size(), 0);
    for (int32_t step = 0; done != lens; ++step) {
        StepPlan plan{.phase = StepPhase::kPrefill, .seqs = {}};
        for (size_t i = 0; i < lens.size(); ++i) {
            const int32_t n = std::min(chunk, lens[i] - done[i]);
            if (n <= 0 || (!starts.empty() && step < starts[i])) continue;
            plan.seqs.push_back({.seq_id = static_cast<SeqId>(i + 1),
                                 .num_new_tokens = n,
                                 .num_computed_tokens = done[i],
                                 .samples = done[i] + n == lens[i]});
            done[i] += n;
        }
        if (!plan.seqs.empty()) driver.step(plan, data.step_inputs(plan));
    }
}

// One decode step of every sequence (ids 1, 2, ...), sequence i at position lens[i]; returns each
// layer's output f32 [num_seqs, num_heads * head_dim].
inline std::vector<std::vector<float>> decode(ContractDriver& driver, const TokenData& data,
                                              const std::vector<int32_t>& lens) {
    const StepPlan plan = decode_plan(lens);
    return driver.step(plan, data.step_inputs(plan));
}

}  // namespace se::testing
