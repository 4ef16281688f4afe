#include "sparse/window_eviction_runtime.h"

#include <fmt/core.h>

#include <span>
#include <string>

#include "sparse/key_scorer.h"

namespace se {

Status parse_window_rule(const Knobs& knobs, WindowRule& rule) {
    SE_ASSIGN_OR_RETURN(rule.window, knobs.integer("window", rule.window, 1));
    SE_ASSIGN_OR_RETURN(rule.sink, knobs.integer("sink", rule.sink, 0));
    SE_ASSIGN_OR_RETURN(rule.kernel, knobs.integer("kernel", rule.kernel, 1));
    if (rule.kernel % 2 == 0) {
        return knobs.error("kernel", fmt::format("must be odd, got {}", rule.kernel));
    }
    SE_ASSIGN_OR_RETURN(
        const std::string pooling,
        knobs.choice("pooling", rule.pooling == PoolKind::kMax ? "max" : "avg", {"max", "avg"}));
    rule.pooling = pooling == "max" ? PoolKind::kMax : PoolKind::kAvg;
    return {};
}

void WindowEvictionRuntime::prepare_step(const StepPlan& plan) {
    plan_ = plan;
    pending_ = {};
    selected_.clear();
    // The runtime hears of no release: windows of sequences the cache no longer holds go here, and
    // a sequence starting over (preempted, recomputed) starts an empty window.
    std::erase_if(windows_, [&](const auto& entry) { return !cache_.kv().contains(entry.first); });
    for (const StepSeq& s : plan_.seqs) {
        if (s.num_computed_tokens == 0) windows_.erase(s.seq_id);
        // A prompt compacts at its final chunk; decode only with re-eviction on.
        const bool may_compact =
            plan_.phase == StepPhase::kPrefill ? s.samples : options_.decode_interval > 0;
        if (may_compact) {
            selected_[s.seq_id] = options_.schedule(s.num_computed_tokens + s.num_new_tokens);
        }
    }
}

bool WindowEvictionRuntime::needs_attention_stats(int32_t, StepPhase phase) const {
    return phase == StepPhase::kPrefill || options_.decode_interval > 0;
}

void WindowEvictionRuntime::on_attention_end(int32_t layer, const AttentionStats& stats) {
    const auto width = static_cast<int32_t>(stats.q.cols);
    const int32_t slack = plan_.phase == StepPhase::kDecode ? options_.decode_interval : 0;
    int64_t row = 0;
    for (const StepSeq& s : plan_.seqs) {
        QueryWindow& window = windows_of(s.seq_id, width).at(layer);
        window.push(stats.q.f32() + row * width, s.num_new_tokens, s.num_computed_tokens);
        row += s.num_new_tokens;
        auto it = selected_.find(s.seq_id);
        if (it == selected_.end() || it->second.empty()) continue;
        const int32_t selected = it->second.at(layer);
        const int32_t n = cache_.kv().num_entries(s.seq_id, cache_.lane(layer));
        // The layer's share (and, in decode, the interval's slack) covers what it holds.
        if (n <= int64_t{selected} + options_.rule.window + slack) continue;
        pending_.compactions.push_back(select(s.seq_id, layer, selected, window, stats.args));
    }
}

Compaction WindowEvictionRuntime::select(SeqId seq, int32_t layer, int32_t selected,
                                         const QueryWindow& window,
                                         const AttentionArgs& args) const {
    const int32_t lane = cache_.lane(layer);
    const int32_t n = cache_.kv().num_entries(seq, lane);
    const int32_t w = options_.rule.window;
    const int32_t sink = options_.rule.sink;
    const KeyScorer keys(cache_.kv().cache(), cache_.kv().block_table(seq, lane), n, args);
    const std::vector<float> mass =
        window_group_mass(keys, cache_.entry_positions(seq, lane), window, n - w, args);
    const std::vector<float> scores = shared_window_scores(
        mass, args.num_kv_heads, options_.rule.kernel, options_.rule.pooling, options_.comm);
    Compaction c{.seq = seq, .lane = lane, .keep = {}};
    for (int32_t j = 0; j < sink; ++j) c.keep.push_back(j);
    for (int32_t j : top_k(std::span(scores).subspan(sink), selected - sink)) {
        c.keep.push_back(sink + j);
    }
    for (int32_t j = n - w; j < n; ++j) c.keep.push_back(j);
    return c;
}

EvictionPlan WindowEvictionRuntime::finish_step() {
    // Without decode re-eviction a prompt's window is done with once its last chunk scored it.
    if (plan_.phase == StepPhase::kPrefill && options_.decode_interval == 0) {
        for (const StepSeq& s : plan_.seqs) {
            if (s.samples) windows_.erase(s.seq_id);
        }
    }
    return std::move(pending_);
}

std::vector<QueryWindow>& WindowEvictionRuntime::windows_of(SeqId seq, int32_t width) {
    auto [it, inserted] = windows_.try_emplace(seq);
    if (inserted) {
        it->second.assign(static_cast<size_t>(num_layers_),
                          QueryWindow(options_.rule.window, width));
    }
    return it->second;
}

}  // namespace se
