#include "support/methods/naive_attention.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace se::testing {

NaiveAttention::NaiveAttention(const ModelConfig& c)
    : num_heads_(c.num_heads),
      num_kv_heads_(c.num_kv_heads),
      head_dim_(c.head_dim),
      scale_(1.0f / std::sqrt(static_cast<float>(c.head_dim))),
      pos_(static_cast<size_t>(c.num_layers)),
      k_(static_cast<size_t>(c.num_layers)),
      v_(static_cast<size_t>(c.num_layers)) {}

void NaiveAttention::begin(std::span<const int32_t> positions) {
    step_positions_.assign(positions.begin(), positions.end());
}

void NaiveAttention::store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) {
    SE_CHECK(k.rows == static_cast<int64_t>(step_positions_.size()));
    for (int64_t i = 0; i < k.rows; ++i) {
        pos_[layer].push_back(step_positions_[i]);
        k_[layer].insert(k_[layer].end(), k.f32() + i * k.cols, k.f32() + (i + 1) * k.cols);
        v_[layer].insert(v_[layer].end(), v.f32() + i * v.cols, v.f32() + (i + 1) * v.cols);
    }
}

std::vector<double> NaiveAttention::probabilities(int32_t layer, const float* q, int32_t head,
                                                  int32_t position) const {
    const int32_t g = head / (num_heads_ / num_kv_heads_);
    const int64_t width = int64_t{num_kv_heads_} * head_dim_;
    const auto n = pos_[layer].size();
    std::vector<double> p(n, 0.0);
    double max = -INFINITY;
    for (size_t j = 0; j < n; ++j) {
        if (pos_[layer][j] > position) continue;
        const float* k = k_[layer].data() + j * width + int64_t{g} * head_dim_;
        double dot = 0.0;
        for (int32_t d = 0; d < head_dim_; ++d) dot += double{q[d]} * k[d];
        p[j] = dot * scale_;
        max = std::max(max, p[j]);
    }
    double total = 0.0;
    for (size_t j = 0; j < n; ++j) {
        p[j] = pos_[layer][j] > position ? 0.0 : std::exp(p[j] - max);
        total += p[j];
    }
    for (double& x : p) x /= total;
    return p;
}

void NaiveAttention::attend(int32_t layer, const ConstTensorView& q, TensorView out) {
    const int32_t g_size = num_heads_ / num_kv_heads_;
    const int64_t width = int64_t{num_kv_heads_} * head_dim_;
    for (int64_t i = 0; i < q.rows; ++i) {
        const float* row = q.f32() + i * q.cols;
        if (on_query_) on_query_(layer, static_cast<int32_t>(i), row);
        for (int32_t h = 0; h < num_heads_; ++h) {
            const std::vector<double> p =
                probabilities(layer, row + int64_t{h} * head_dim_, h, step_positions_[i]);
            float* dst = out.f32_row(i) + int64_t{h} * head_dim_;
            for (int32_t d = 0; d < head_dim_; ++d) {
                double acc = 0.0;
                for (size_t j = 0; j < p.size(); ++j) {
                    acc += p[j] * v_[layer][j * width + int64_t{h / g_size} * head_dim_ + d];
                }
                dst[d] = static_cast<float>(acc);
            }
        }
    }
}

void NaiveAttention::erase(std::span<const int32_t> positions) {
    const int64_t width = int64_t{num_kv_heads_} * head_dim_;
    for (size_t layer = 0; layer < pos_.size(); ++layer) {
        std::vector<int32_t> pos;
        std::vector<float> k;
        std::vector<float> v;
        for (size_t j = 0; j < pos_[layer].size(); ++j) {
            if (std::find(positions.begin(), positions.end(), pos_[layer][j]) != positions.end()) {
                continue;
            }
            pos.push_back(pos_[layer][j]);
            k.insert(k.end(), k_[layer].begin() + j * width, k_[layer].begin() + (j + 1) * width);
            v.insert(v.end(), v_[layer].begin() + j * width, v_[layer].begin() + (j + 1) * width);
        }
        pos_[layer] = std::move(pos);
        k_[layer] = std::move(k);
        v_[layer] = std::move(v);
    }
}

}  // namespace se::testing
