#include "sparse/window_scores.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "sparse/rank_reduce.h"

namespace se {

QueryWindow::QueryWindow(int32_t capacity, int32_t width) : capacity_(capacity), width_(width) {
    SE_CHECK(capacity >= 1 && width >= 1, "query window of %d rows of width %d", capacity, width);
}

void QueryWindow::push(const float* rows, int32_t num_rows, int32_t first_position) {
    SE_CHECK(positions_.empty() || first_position > positions_.back(),
             "query window rows out of order: %d after %d", first_position,
             positions_.empty() ? -1 : positions_.back());
    // Rows that would leave again at once are never copied.
    const int32_t skip = std::max(0, num_rows - capacity_);
    rows_.insert(rows_.end(), rows + int64_t{skip} * width_, rows + int64_t{num_rows} * width_);
    for (int32_t t = skip; t < num_rows; ++t) positions_.push_back(first_position + t);
    const int32_t drop = size() - capacity_;
    if (drop <= 0) return;
    rows_.erase(rows_.begin(), rows_.begin() + int64_t{drop} * width_);
    positions_.erase(positions_.begin(), positions_.begin() + drop);
}

std::vector<float> window_group_mass(const KeyScorer& keys,
                                     std::span<const int32_t> entry_positions,
                                     const QueryWindow& window, int32_t num_candidates,
                                     const AttentionArgs& args) {
    const int32_t n = keys.num_entries();
    SE_CHECK(static_cast<int32_t>(entry_positions.size()) == n, "%zu positions for %d entries",
             entry_positions.size(), n);
    SE_CHECK(num_candidates >= 0 && num_candidates <= n, "%d candidates of %d entries",
             num_candidates, n);
    SE_CHECK(window.width() == args.num_heads * args.head_dim, "window rows of width %d",
             window.width());
    const int32_t group = args.num_heads / args.num_kv_heads;
    std::vector<double> sum(static_cast<size_t>(args.num_kv_heads) * num_candidates, 0.0);
    std::vector<float> p(static_cast<size_t>(args.num_heads) * n);
    for (int32_t i = 0; i < window.size(); ++i) {
        // Row i sees the resident entries at or before its own position.
        const auto visible = static_cast<int32_t>(
            std::upper_bound(entry_positions.begin(), entry_positions.end(), window.position(i)) -
            entry_positions.begin());
        keys.score(window.row(i), visible, ScoreMode::kProbabilities, p);
        const int32_t cols = std::min(visible, num_candidates);
        for (int32_t h = 0; h < args.num_heads; ++h) {
            const float* row = p.data() + int64_t{h} * visible;
            double* acc = sum.data() + int64_t{h / group} * num_candidates;
            for (int32_t j = 0; j < cols; ++j) acc[j] += row[j];
        }
    }
    const double norm =
        window.size() == 0 ? 0.0 : 1.0 / (static_cast<double>(window.size()) * group);
    std::vector<float> mass(sum.size());
    for (size_t x = 0; x < sum.size(); ++x) mass[x] = static_cast<float>(sum[x] * norm);
    return mass;
}

std::vector<float> shared_window_scores(std::span<const float> group_mass, int32_t num_kv_heads,
                                        int32_t kernel, PoolKind pool, Communicator* comm) {
    SE_CHECK(num_kv_heads >= 1 && group_mass.size() % num_kv_heads == 0,
             "%zu group scores for %d KV heads", group_mass.size(), num_kv_heads);
    const size_t n = group_mass.size() / num_kv_heads;
    std::vector<float> shared(n, -std::numeric_limits<float>::infinity());
    for (int32_t g = 0; g < num_kv_heads; ++g) {
        for (size_t j = 0; j < n; ++j) shared[j] = std::max(shared[j], group_mass[g * n + j]);
    }
    // Before pooling: an average pool of per-rank maxima is not the pool of the maximum.
    max_over_ranks(comm, shared);
    return pool1d(shared, kernel, pool);
}

}  // namespace se
