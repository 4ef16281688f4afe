#include "support/methods/token_history.h"

#include <algorithm>
#include <cmath>

namespace se::testing {

TokenHistory::TokenHistory(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim)
    : num_layers_(num_layers), num_kv_heads_(num_kv_heads), head_dim_(head_dim) {}

void TokenHistory::record(const StepPlan& plan, const std::vector<LayerInputs>& inputs) {
    SE_CHECK(static_cast<int32_t>(inputs.size()) == num_layers_);
    const int64_t kw = int64_t{num_kv_heads_} * head_dim_;
    int64_t row = 0;
    for (const StepSeq& s : plan.seqs) {
        Rows& r = seqs_[s.seq_id];
        r.k.resize(static_cast<size_t>(num_layers_));
        r.v.resize(static_cast<size_t>(num_layers_));
        SE_CHECK(static_cast<int64_t>(r.k[0].size()) == s.num_computed_tokens * kw,
                 "history of sequence %lld holds %zu rows, the plan says %d computed",
                 static_cast<long long>(s.seq_id), r.k[0].size() / kw, s.num_computed_tokens);
        for (int32_t l = 0; l < num_layers_; ++l) {
            const auto first = static_cast<ptrdiff_t>(row * kw);
            const auto last = static_cast<ptrdiff_t>((row + s.num_new_tokens) * kw);
            r.k[l].insert(r.k[l].end(), inputs[l].k.begin() + first, inputs[l].k.begin() + last);
            r.v[l].insert(r.v[l].end(), inputs[l].v.begin() + first, inputs[l].v.begin() + last);
        }
        row += s.num_new_tokens;
    }
}

void TokenHistory::copy_prefix(SeqId from, SeqId to, int32_t count) {
    const Rows& src = seqs_.at(from);
    const auto n = static_cast<ptrdiff_t>(int64_t{count} * num_kv_heads_ * head_dim_);
    Rows& dst = seqs_[to];
    dst.k.assign(static_cast<size_t>(num_layers_), {});
    dst.v.assign(static_cast<size_t>(num_layers_), {});
    for (int32_t l = 0; l < num_layers_; ++l) {
        dst.k[l].assign(src.k[l].begin(), src.k[l].begin() + n);
        dst.v[l].assign(src.v[l].begin(), src.v[l].begin() + n);
    }
}

int32_t TokenHistory::length(SeqId seq) const {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return 0;
    return static_cast<int32_t>(it->second.k[0].size() / (int64_t{num_kv_heads_} * head_dim_));
}

const float* TokenHistory::key(SeqId seq, int32_t layer, int32_t pos, int32_t kv_head) const {
    return seqs_.at(seq).k.at(layer).data() + (int64_t{pos} * num_kv_heads_ + kv_head) * head_dim_;
}

const float* TokenHistory::value(SeqId seq, int32_t layer, int32_t pos, int32_t kv_head) const {
    return seqs_.at(seq).v.at(layer).data() + (int64_t{pos} * num_kv_heads_ + kv_head) * head_dim_;
}

std::vector<double> TokenHistory::attend(SeqId seq, int32_t layer, const float* q, int32_t kv_head,
                                         std::span<const int32_t> positions, float scale) const {
    std::vector<double> s(positions.size());
    double max = -INFINITY;
    for (size_t j = 0; j < positions.size(); ++j) {
        const float* k = key(seq, layer, positions[j], kv_head);
        double dot = 0.0;
        for (int32_t i = 0; i < head_dim_; ++i) dot += double{q[i]} * k[i];
        s[j] = dot * scale;
        max = std::max(max, s[j]);
    }
    double total = 0.0;
    for (double& x : s) total += (x = std::exp(x - max));
    std::vector<double> out(static_cast<size_t>(head_dim_), 0.0);
    for (size_t j = 0; j < positions.size(); ++j) {
        const float* v = value(seq, layer, positions[j], kv_head);
        for (int32_t i = 0; i < head_dim_; ++i) out[i] += s[j] / total * v[i];
    }
    return out;
}

}  // namespace se::testing
