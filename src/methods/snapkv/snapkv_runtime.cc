#include "methods/snapkv/snapkv_runtime.h"

#include <span>

#include "sparse/key_scorer.h"

namespace se {

void SnapRuntime::prepare_step(const StepPlan& plan) {
    plan_ = plan;
    pending_ = {};
    // The runtime hears of no release: windows of sequences the cache no longer holds go here, and
    // a sequence starting over (preempted, recomputed) starts an empty window.
    std::erase_if(windows_, [&](const auto& entry) { return !cache_.kv().contains(entry.first); });
    for (const StepSeq& s : plan_.seqs) {
        if (s.num_computed_tokens == 0) windows_.erase(s.seq_id);
    }
}

bool SnapRuntime::needs_attention_stats(int32_t, StepPhase phase) const {
    return phase == StepPhase::kPrefill || knobs_.decode_interval > 0;
}

bool SnapRuntime::due(const StepSeq& s, int32_t entries) const {
    if (plan_.phase == StepPhase::kPrefill) return s.samples && entries > knobs_.budget;
    return knobs_.decode_interval > 0 && entries > int64_t{knobs_.budget} + knobs_.decode_interval;
}

void SnapRuntime::on_attention_end(int32_t layer, const AttentionStats& stats) {
    const auto width = static_cast<int32_t>(stats.q.cols);
    int64_t row = 0;
    for (const StepSeq& s : plan_.seqs) {
        QueryWindow& window = windows_of(s.seq_id, width).at(layer);
        window.push(stats.q.f32() + row * width, s.num_new_tokens, s.num_computed_tokens);
        row += s.num_new_tokens;
        const int32_t lane = cache_.lane(layer);
        if (due(s, cache_.kv().num_entries(s.seq_id, lane))) {
            pending_.compactions.push_back(select(s.seq_id, layer, window, stats.args));
        }
    }
}

Compaction SnapRuntime::select(SeqId seq, int32_t layer, const QueryWindow& window,
                               const AttentionArgs& args) const {
    const int32_t lane = cache_.lane(layer);
    const int32_t n = cache_.kv().num_entries(seq, lane);
    const int32_t w = knobs_.window;
    const KeyScorer keys(cache_.kv().cache(), cache_.kv().block_table(seq, lane), n, args);
    const std::vector<float> mass =
        window_group_mass(keys, cache_.entry_positions(seq, lane), window, n - w, args);
    const std::vector<float> scores =
        shared_window_scores(mass, args.num_kv_heads, knobs_.kernel, knobs_.pooling);
    Compaction c{.seq = seq, .lane = lane, .keep = {}};
    for (int32_t j = 0; j < knobs_.sink; ++j) c.keep.push_back(j);
    const int32_t num_selected = knobs_.budget - knobs_.sink - w;
    for (int32_t j : top_k(std::span(scores).subspan(knobs_.sink), num_selected)) {
        c.keep.push_back(knobs_.sink + j);
    }
    for (int32_t j = n - w; j < n; ++j) c.keep.push_back(j);
    return c;
}

EvictionPlan SnapRuntime::finish_step() {
    // Without decode re-eviction a prompt's window is done with once its last chunk scored it.
    if (plan_.phase == StepPhase::kPrefill && knobs_.decode_interval == 0) {
        for (const StepSeq& s : plan_.seqs) {
            if (s.samples) windows_.erase(s.seq_id);
        }
    }
    return std::move(pending_);
}

std::vector<QueryWindow>& SnapRuntime::windows_of(SeqId seq, int32_t width) {
    auto [it, inserted] = windows_.try_emplace(seq);
    if (inserted) {
        it->second.assign(static_cast<size_t>(num_layers_), QueryWindow(knobs_.window, width));
    }
    return it->second;
}

}  // namespace se
