#include "methods/adakv/head_scores.h"

#include "core/check.h"
#include "sparse/key_scorer.h"
#include "sparse/ranking.h"

namespace se::adakv {

std::vector<float> window_head_scores(const HeadWindow& head, const AttentionArgs& args,
                                      int32_t kernel) {
    const int32_t n = head.num_entries;
    const int32_t w = head.window;
    SE_CHECK(w >= 1 && w < n && args.num_kv_heads == 1, "window %d of %d entries", w, n);
    const KeyScorer scorer(*head.cache, head.block_table, n, args);
    const int32_t scored = n - w;
    std::vector<double> sums(static_cast<size_t>(scored), 0.0);
    std::vector<float> probs(static_cast<size_t>(args.num_heads) * n);
    for (int32_t i = 0; i < w; ++i) {
        const int32_t visible = scored + i + 1;
        scorer.score(head.q + i * head.q_stride, visible, ScoreMode::kProbabilities, probs);
        for (int32_t h = 0; h < args.num_heads; ++h) {
            const float* row = probs.data() + int64_t{h} * visible;
            for (int32_t j = 0; j < scored; ++j) sums[j] += row[j];
        }
    }
    std::vector<float> mean(sums.size());
    const double count = static_cast<double>(w) * args.num_heads;
    for (size_t j = 0; j < sums.size(); ++j) mean[j] = static_cast<float>(sums[j] / count);
    return pool1d(mean, kernel, PoolKind::kMax);
}

}  // namespace se::adakv
