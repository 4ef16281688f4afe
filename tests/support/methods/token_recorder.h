// Test-only: records every token's q, k and v a test hands a driver, by sequence, layer and
// position, for naive references that read any of them (the masked-dense attention below).
// Sequence id s is recorded at index s - 1.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "support/methods/contract_driver.h"

namespace se::testing {

// Every token's q, k and v of one sequence, by position, per layer.
struct History {
    std::vector<std::vector<float>> q, k, v;  // [layer] f32 [position, width]
};

// Runs plans on a driver and records every sequence's inputs by position.
class Recorder {
  public:
    Recorder(ContractDriver& d, int32_t num_seqs) : d_(d), hist_(static_cast<size_t>(num_seqs)) {
        const auto layers = static_cast<size_t>(d.config().num_layers);
        for (History& h : hist_) h.q.assign(layers, {}), h.k.assign(layers, {}), h.v = h.k;
    }

    // Runs `plan` (seq ids 1..num_seqs) on `inputs`; returns the outputs per layer.
    std::vector<std::vector<float>> run(const StepPlan& plan,
                                        const std::vector<LayerInputs>& inputs) {
        const int64_t qw = int64_t{d_.args().num_heads} * d_.args().head_dim;
        const int64_t kw = int64_t{d_.args().num_kv_heads} * d_.args().head_dim;
        int64_t row = 0;
        for (const StepSeq& s : plan.seqs) {
            History& h = hist_[static_cast<size_t>(s.seq_id - 1)];
            for (size_t l = 0; l < inputs.size(); ++l) {
                auto take = [&](const std::vector<float>& src, int64_t w, std::vector<float>& dst) {
                    dst.insert(dst.end(), src.begin() + row * w,
                               src.begin() + (row + s.num_new_tokens) * w);
                };
                take(inputs[l].q, qw, h.q[l]);
                take(inputs[l].k, kw, h.k[l]);
                take(inputs[l].v, kw, h.v[l]);
            }
            row += s.num_new_tokens;
        }
        return d_.step(plan, inputs);
    }

    const History& history(SeqId seq) const { return hist_[static_cast<size_t>(seq - 1)]; }

  private:
    ContractDriver& d_;
    std::vector<History> hist_;
};

// Softmax (double) of query head h at position p against the keys at `positions`; writes the
// probabilities and returns the attention output.
inline std::vector<double> attend(const History& hist, int32_t layer, const AttentionArgs& a,
                                  int32_t p, int32_t h, const std::vector<int32_t>& positions,
                                  std::vector<double>& probs) {
    const int32_t d = a.head_dim;
    const int32_t g = h / (a.num_heads / a.num_kv_heads);
    const float* q = hist.q[layer].data() + (int64_t{p} * a.num_heads + h) * d;
    probs.assign(positions.size(), 0.0);
    double max = -INFINITY;
    for (size_t j = 0; j < positions.size(); ++j) {
        const float* k = hist.k[layer].data() + (int64_t{positions[j]} * a.num_kv_heads + g) * d;
        double dot = 0.0;
        for (int32_t i = 0; i < d; ++i) dot += double{q[i]} * k[i];
        probs[j] = dot * a.scale;
        max = std::max(max, probs[j]);
    }
    double total = 0.0;
    for (double& x : probs) total += (x = std::exp(x - max));
    std::vector<double> out(static_cast<size_t>(d), 0.0);
    for (size_t j = 0; j < positions.size(); ++j) {
        probs[j] /= total;
        const float* v = hist.v[layer].data() + (int64_t{positions[j]} * a.num_kv_heads + g) * d;
        for (int32_t i = 0; i < d; ++i) out[i] += probs[j] * v[i];
    }
    return out;
}

}  // namespace se::testing
