#include "methods/pyramidkv/pyramidkv_runtime.h"

#include <span>

#include "sparse/key_scorer.h"

namespace se {

void PyramidRuntime::prepare_step(const StepPlan& plan) {
    plan_ = plan;
    pending_ = {};
    selected_.clear();
    // The runtime hears of no release: windows of sequences the cache no longer holds go here, and
    // a sequence starting over (preempted, recomputed) starts an empty window.
    std::erase_if(windows_, [&](const auto& entry) { return !cache_.kv().contains(entry.first); });
    if (plan_.phase != StepPhase::kPrefill) return;
    for (const StepSeq& s : plan_.seqs) {
        if (s.num_computed_tokens == 0) windows_.erase(s.seq_id);
        if (s.samples) {
            selected_[s.seq_id] =
                pyramid_selection(shape(), s.num_computed_tokens + s.num_new_tokens);
        }
    }
}

bool PyramidRuntime::needs_attention_stats(int32_t, StepPhase phase) const {
    return phase == StepPhase::kPrefill;
}

void PyramidRuntime::on_attention_end(int32_t layer, const AttentionStats& stats) {
    const auto width = static_cast<int32_t>(stats.q.cols);
    int64_t row = 0;
    for (const StepSeq& s : plan_.seqs) {
        QueryWindow& window = windows_of(s.seq_id, width).at(layer);
        window.push(stats.q.f32() + row * width, s.num_new_tokens, s.num_computed_tokens);
        row += s.num_new_tokens;
        auto it = selected_.find(s.seq_id);
        if (it == selected_.end() || it->second.empty()) continue;
        const int32_t selected = it->second[layer];
        const int32_t n = cache_.kv().num_entries(s.seq_id, cache_.lane(layer));
        if (selected + knobs_.window >= n) continue;  // the layer's share covers the prompt
        pending_.compactions.push_back(select(s.seq_id, layer, selected, window, stats.args));
    }
}

Compaction PyramidRuntime::select(SeqId seq, int32_t layer, int32_t selected,
                                  const QueryWindow& window, const AttentionArgs& args) const {
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
    for (int32_t j : top_k(std::span(scores).subspan(knobs_.sink), selected - knobs_.sink)) {
        c.keep.push_back(knobs_.sink + j);
    }
    for (int32_t j = n - w; j < n; ++j) c.keep.push_back(j);
    return c;
}

EvictionPlan PyramidRuntime::finish_step() {
    for (const auto& [seq, selected] : selected_) windows_.erase(seq);  // the prompt is scored
    return std::move(pending_);
}

std::vector<QueryWindow>& PyramidRuntime::windows_of(SeqId seq, int32_t width) {
    auto [it, inserted] = windows_.try_emplace(seq);
    if (inserted) {
        it->second.assign(static_cast<size_t>(num_layers_), QueryWindow(knobs_.window, width));
    }
    return it->second;
}

}  // namespace se
