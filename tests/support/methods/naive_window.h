// Test-only: naive statements, in double, of what observation-window eviction methods compute,
// written from SPECS.md section 0 without any of the engine's code, for tests to compare the
// methods against:
//
//   P_{h,i,j}  softmax over the keys visible to window row i (visible[i] of them)
//   s[j]       pool_k( max_g mean_{h in group g} mean_i P_{h,i,j} )      j < num_candidates
//   top k      the k highest, ties to the lower index
//
// plus plain softmax attention over a chosen set of (k, v) rows (the masked-dense oracle), and a
// comparison of kept sets that forgives swaps between (near-)equal scores.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

namespace se::testing {

struct NaiveHeads {
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;
    double scale = 0.0;
};

// keys[j]: f32 [num_kv_heads * head_dim] of entry j; queries[i]: f32 [num_heads * head_dim] of
// window row i, which sees keys [0, visible[i]).
inline std::vector<double> naive_window_scores(const NaiveHeads& shape,
                                               const std::vector<const float*>& keys,
                                               const std::vector<const float*>& queries,
                                               const std::vector<int32_t>& visible,
                                               int32_t num_candidates, int32_t kernel,
                                               bool max_pool) {
    const int32_t d = shape.head_dim;
    const int32_t group = shape.num_heads / shape.num_kv_heads;
    std::vector<std::vector<double>> mean(
        static_cast<size_t>(shape.num_kv_heads),
        std::vector<double>(static_cast<size_t>(num_candidates), 0.0));
    for (size_t i = 0; i < queries.size(); ++i) {
        for (int32_t h = 0; h < shape.num_heads; ++h) {
            const int32_t g = h / group;
            std::vector<double> z(static_cast<size_t>(visible[i]));
            for (int32_t j = 0; j < visible[i]; ++j) {
                double dot = 0.0;
                for (int32_t x = 0; x < d; ++x) {
                    dot += double{queries[i][h * d + x]} * keys[j][g * d + x];
                }
                z[j] = dot * shape.scale;
            }
            const double max = *std::max_element(z.begin(), z.end());
            double total = 0.0;
            for (double v : z) total += std::exp(v - max);
            for (int32_t j = 0; j < std::min(visible[i], num_candidates); ++j) {
                mean[g][j] += std::exp(z[j] - max) / total / (double(queries.size()) * group);
            }
        }
    }
    std::vector<double> shared(static_cast<size_t>(num_candidates),
                               -std::numeric_limits<double>::infinity());
    for (const auto& m : mean) {
        for (int32_t j = 0; j < num_candidates; ++j) shared[j] = std::max(shared[j], m[j]);
    }
    std::vector<double> pooled(shared.size());
    const int32_t half = kernel / 2;
    for (int32_t j = 0; j < num_candidates; ++j) {
        double acc = max_pool ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int32_t t = std::max(0, j - half); t <= std::min(num_candidates - 1, j + half); ++t) {
            acc = max_pool ? std::max(acc, shared[t]) : acc + shared[t];
        }
        pooled[j] = max_pool ? acc : acc / kernel;
    }
    return pooled;
}

// Indices of the k highest of s[first, s.size()), ascending; ties to the lower index.
inline std::vector<int32_t> naive_top_k(const std::vector<double>& s, int32_t first, int32_t k) {
    std::vector<int32_t> order(s.size() - first);
    std::iota(order.begin(), order.end(), first);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(std::max(k, 0))));
    std::sort(order.begin(), order.end());
    return order;
}

// Whether two kept sets of equal size agree up to swapping entries whose scores differ by at most
// `eps` (score[x] for entry x; entries without a score must match exactly).
inline bool same_modulo_ties(const std::vector<int32_t>& got, const std::vector<int32_t>& want,
                             const std::vector<double>& score, double eps) {
    if (got.size() != want.size()) return false;
    const std::set<int32_t> a(got.begin(), got.end());
    const std::set<int32_t> b(want.begin(), want.end());
    std::vector<int32_t> only_got, only_want;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_got));
    std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_want));
    const auto n = static_cast<int32_t>(score.size());
    for (int32_t x : only_got) {
        for (int32_t y : only_want) {
            if (x >= n || y >= n || std::fabs(score[x] - score[y]) > eps) return false;
        }
    }
    return true;
}

// Plain softmax attention of one query head over chosen (k, v) rows of one KV head.
inline std::vector<double> naive_attention(const float* q, const std::vector<const float*>& keys,
                                           const std::vector<const float*>& values, int32_t d,
                                           double scale) {
    std::vector<double> s(keys.size());
    double max = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < keys.size(); ++j) {
        double dot = 0.0;
        for (int32_t i = 0; i < d; ++i) dot += double{q[i]} * keys[j][i];
        s[j] = dot * scale;
        max = std::max(max, s[j]);
    }
    double total = 0.0;
    for (double& x : s) total += (x = std::exp(x - max));
    std::vector<double> out(static_cast<size_t>(d), 0.0);
    for (size_t j = 0; j < keys.size(); ++j) {
        for (int32_t i = 0; i < d; ++i) out[i] += s[j] / total * values[j][i];
    }
    return out;
}

}  // namespace se::testing
