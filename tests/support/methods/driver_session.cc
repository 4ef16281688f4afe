#include "support/methods/driver_session.h"

#include <gtest/gtest.h>

#include <numeric>

namespace se::testing {

DriverSession::DriverSession(const std::string& method, const nlohmann::json& knobs,
                             DriverOptions options)
    : driver_(make_driver(method, knobs, options)),
      options_(options),
      history_(options.num_layers, options.num_kv_heads, options.head_dim) {}

SessionStep DriverSession::run(StepPlan plan) {
    SessionStep s{.plan = std::move(plan), .inputs = {}, .outs = {}};
    s.inputs = driver_->random_inputs(s.plan.num_tokens(), seed_++);
    history_.record(s.plan, s.inputs);
    s.outs = driver_->step(s.plan, s.inputs);
    return s;
}

std::vector<SessionStep> DriverSession::prefill(const std::vector<SeqId>& ids,
                                                const std::vector<int32_t>& lengths,
                                                int32_t chunk) {
    std::vector<SessionStep> steps;
    while (true) {
        StepPlan plan{.phase = StepPhase::kPrefill, .seqs = {}};
        for (size_t i = 0; i < ids.size(); ++i) {
            const int32_t done = history_.length(ids[i]);
            const int32_t n = std::min(chunk, lengths[i] - done);
            if (n <= 0) continue;
            plan.seqs.push_back({.seq_id = ids[i],
                                 .num_new_tokens = n,
                                 .num_computed_tokens = done,
                                 .samples = done + n == lengths[i]});
        }
        if (plan.seqs.empty()) return steps;
        steps.push_back(run(std::move(plan)));
    }
}

SessionStep DriverSession::decode(const std::vector<SeqId>& ids) {
    StepPlan plan{.phase = StepPhase::kDecode, .seqs = {}};
    for (const SeqId id : ids) {
        plan.seqs.push_back({.seq_id = id,
                             .num_new_tokens = 1,
                             .num_computed_tokens = history_.length(id),
                             .samples = true});
    }
    return run(std::move(plan));
}

void DriverSession::expect_row(const SessionStep& step, int32_t row, SeqId seq, int32_t layer,
                               const std::vector<int32_t>& positions) {
    const DriverOptions& o = options_;
    const int32_t qw = o.num_heads * o.head_dim;
    const int32_t group = o.num_heads / o.num_kv_heads;
    for (int32_t h = 0; h < o.num_heads; ++h) {
        const int64_t at = int64_t{row} * qw + h * o.head_dim;
        const auto want = history_.attend(seq, layer, step.inputs[layer].q.data() + at, h / group,
                                          positions, driver_->args().scale);
        for (int32_t x = 0; x < o.head_dim; ++x) {
            EXPECT_NEAR(step.outs[layer][at + x], want[x], 1e-5)
                << "seq " << seq << " layer " << layer << " head " << h << " row " << row;
        }
    }
}

void DriverSession::expect_causal_reads(const SessionStep& step) {
    int32_t row = 0;
    for (const StepSeq& s : step.plan.seqs) {
        for (int32_t r = 0; r < s.num_new_tokens; ++r, ++row) {
            std::vector<int32_t> visible(static_cast<size_t>(s.num_computed_tokens + r + 1));
            std::iota(visible.begin(), visible.end(), 0);
            for (int32_t l = 0; l < options_.num_layers; ++l) {
                expect_row(step, row, s.seq_id, l, visible);
            }
        }
    }
}

int32_t DriverSession::expect_decode_reads(const SessionStep& step, const ReadRule& rule) {
    const int32_t qw = options_.num_heads * options_.head_dim;
    int32_t skipped = 0;
    for (size_t row = 0; row < step.plan.seqs.size(); ++row) {
        const SeqId seq = step.plan.seqs[row].seq_id;
        for (int32_t l = 0; l < options_.num_layers; ++l) {
            const auto positions = rule(seq, l, step.inputs[l].q.data() + row * qw);
            if (!positions) {
                ++skipped;
                continue;
            }
            expect_row(step, static_cast<int32_t>(row), seq, l, *positions);
        }
    }
    return skipped;
}

}  // namespace se::testing
