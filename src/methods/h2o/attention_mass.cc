#include "methods/h2o/attention_mass.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "sparse/key_scorer.h"

namespace se::h2o {

std::vector<float> step_attention_mass(const PagedKvCache& cache, const PagedSeq& seq,
                                       const ConstTensorView& q, const AttentionArgs& args,
                                       int32_t num_threads) {
    std::vector<float> mass(static_cast<size_t>(seq.kv_len), 0.0f);
    if (seq.q_len == 0) return mass;
    const KeyScorer scorer(cache, seq.block_table, seq.kv_len, args);
    const int32_t first_visible = seq.kv_len - seq.q_len + 1;
    // Rows are split over threads in fixed contiguous ranges, each summed in row order into a
    // double accumulator of its own; the ranges are then added in range order. The result
    // depends on the thread count only through the order of double additions.
    const int32_t num_ranges = std::max(
        1, std::min(num_threads > 0 ? num_threads : omp_get_max_threads(), seq.q_len / 16));
    std::vector<std::vector<double>> sums(static_cast<size_t>(num_ranges),
                                          std::vector<double>(mass.size(), 0.0));
#pragma omp parallel for num_threads(num_ranges) schedule(static, 1) if (num_ranges > 1)
    for (int32_t range = 0; range < num_ranges; ++range) {
        std::vector<float> probs(static_cast<size_t>(args.num_heads) * seq.kv_len);
        const int32_t begin = static_cast<int32_t>(int64_t{seq.q_len} * range / num_ranges);
        const int32_t end = static_cast<int32_t>(int64_t{seq.q_len} * (range + 1) / num_ranges);
        std::vector<double>& own = sums[range];
        for (int32_t r = begin; r < end; ++r) {
            const int32_t visible = first_visible + r;
            scorer.score(q.f32() + int64_t{seq.q_start + r} * q.cols, visible,
                         ScoreMode::kProbabilities, probs);
            for (int32_t h = 0; h < args.num_heads; ++h) {
                const float* row = probs.data() + int64_t{h} * visible;
                for (int32_t j = 0; j < visible; ++j) own[j] += row[j];
            }
        }
    }
    for (size_t j = 0; j < mass.size(); ++j) {
        double total = 0.0;
        for (const std::vector<double>& own : sums) total += own[j];
        mass[j] = static_cast<float>(total);
    }
    return mass;
}

}  // namespace se::h2o
