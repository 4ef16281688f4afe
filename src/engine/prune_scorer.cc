#include "engine/prune_scorer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "sparse/key_scorer.h"

namespace se {
namespace {

// Passes every call through to the controller and, after each layer's attention, scores the
// candidates from the layer's queries.
class ScoringAttention final : public LayerAttention {
  public:
    ScoringAttention(SparseController& controller, const CacheManager& cache,
                     const ScoringPass& pass, std::span<float> scores)
        : controller_(controller), cache_(cache), pass_(pass), scores_(scores) {}

    std::optional<PlainKvStore> plain_store(int32_t layer) override {
        return controller_.plain_store(layer);
    }
    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override {
        controller_.store(layer, k, v);
    }
    void attend(int32_t layer, const ConstTensorView& q, TensorView out) override {
        controller_.attend(layer, q, out);
        score(layer, q);
    }
    void on_layer_end(int32_t layer) override { controller_.on_layer_end(layer); }

  private:
    void score(int32_t layer, const ConstTensorView& q) {
        ResidentKeys keys;
        SE_CHECK(cache_.resident_keys(pass_.seq, layer, keys),
                 "the method cannot show its keys for scoring");
        // Where each candidate sits among the resident entries (-1: not resident here).
        std::vector<int32_t> at;
        size_t r = 0;
        for (int32_t c : pass_.candidates) {
            while (r < keys.positions.size() && keys.positions[r] < c) ++r;
            at.push_back(
                r < keys.positions.size() && keys.positions[r] == c ? static_cast<int32_t>(r) : -1);
        }
        const AttentionArgs& args = controller_.args();
        const KeyScorer scorer(*keys.cache, keys.block_table, keys.num_entries, args);
        const auto num_rows = static_cast<int32_t>(q.rows);
        const auto num_candidates = at.size();
        // acc[h][k]: the row reduction of head h's probability at candidate k.
        std::vector<double> acc(static_cast<size_t>(args.num_heads) * num_candidates, 0.0);
        std::vector<float> logits(static_cast<size_t>(args.num_heads) * keys.num_entries);
        for (int32_t i = 0; i < num_rows; ++i) {
            scorer.score(q.f32() + int64_t{i} * q.cols, keys.num_entries, ScoreMode::kLogits,
                         logits);
            // Causal over the resident entries: the last num_rows are the queries' own.
            const size_t visible = keys.entries.size() - static_cast<size_t>(num_rows - 1 - i);
            for (int32_t h = 0; h < args.num_heads; ++h) {
                const float* z = logits.data() + int64_t{h} * keys.num_entries;
                double max = -INFINITY;
                for (size_t e = 0; e < visible; ++e) {
                    max = std::max<double>(max, z[keys.entries[e]]);
                }
                double total = 0.0;
                for (size_t e = 0; e < visible; ++e) total += std::exp(z[keys.entries[e]] - max);
                for (size_t k = 0; k < num_candidates; ++k) {
                    if (at[k] < 0) continue;
                    const double p = std::exp(z[keys.entries[at[k]]] - max) / total;
                    double& a = acc[h * num_candidates + k];
                    a = pass_.rows == RowReduction::kMean ? a + p / num_rows : std::max(a, p);
                }
            }
        }
        for (int32_t h = 0; h < args.num_heads; ++h) {
            for (size_t k = 0; k < num_candidates; ++k) {
                scores_[k] = std::max(scores_[k], static_cast<float>(acc[h * num_candidates + k]));
            }
        }
    }

    SparseController& controller_;
    const CacheManager& cache_;
    const ScoringPass& pass_;
    std::span<float> scores_;
};

}  // namespace

Status PruneScorer::run(const ScoringPass& pass, std::span<float> scores) {
    SE_CHECK(scores.size() == pass.candidates.size());
    const auto num_queries = static_cast<int32_t>(pass.queries.size());
    const StepPlan plan{.phase = StepPhase::kPrefill,
                        .seqs = {{.seq_id = pass.seq,
                                  .num_new_tokens = num_queries,
                                  .num_computed_tokens = pass.context_len,
                                  .samples = false}}};
    if (Status s = controller_.begin_step(plan); !s.ok()) {
        return resource_exhausted(fmt::format(
            "no KV room for the {} tokens of the scoring pass: {}", num_queries, s.message()));
    }
    std::vector<int32_t> positions(pass.queries.size());
    std::iota(positions.begin(), positions.end(), pass.context_len);
    ScoringAttention attention(controller_, cache_, pass, scores);
    model_.forward({.token_ids = pass.queries, .positions = positions, .logit_rows = {}}, attention,
                   TensorView{DType::kF32, nullptr, 0, model_.config().vocab_size});
    controller_.end_step();
    return {};
}

}  // namespace se
