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
    ScoringAttention(SparseController& controller, const FullCacheManager& cache, SeqId seq,
                     const ScoringPass& pass, std::span<float> scores)
        : controller_(controller), cache_(cache), seq_(seq), pass_(pass), scores_(scores) {
        std::vector<int32_t> positions;
        cache.kv().resident_entries(seq, entries_, positions);
        // Where each candidate sits among the resident entries.
        size_t r = 0;
        for (int32_t c : pass.candidates) {
            while (r < positions.size() && positions[r] < c) ++r;
            SE_CHECK(r < positions.size() && positions[r] == c,
                     "candidate position %d is not resident", c);
            candidate_index_.push_back(static_cast<int32_t>(r));
        }
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
        const AttentionArgs& args = controller_.args();
        const BlockTable* table = cache_.kv().table(seq_);
        const KeyScorer keys(cache_.kv().layer_cache(layer), table->blocks, table->num_entries,
                             args);
        const auto num_rows = static_cast<int32_t>(q.rows);
        const auto num_candidates = candidate_index_.size();
        // acc[h][k]: the row reduction of head h's probability at candidate k.
        std::vector<double> acc(static_cast<size_t>(args.num_heads) * num_candidates, 0.0);
        std::vector<float> logits(static_cast<size_t>(args.num_heads) * table->num_entries);
        for (int32_t i = 0; i < num_rows; ++i) {
            keys.score(q.f32() + int64_t{i} * q.cols, table->num_entries, ScoreMode::kLogits,
                       logits);
            // Causal over the resident entries: the last num_rows are the queries' own.
            const auto visible = entries_.size() - static_cast<size_t>(num_rows - 1 - i);
            for (int32_t h = 0; h < args.num_heads; ++h) {
                const float* z = logits.data() + int64_t{h} * table->num_entries;
                double max = -INFINITY;
                for (size_t r = 0; r < visible; ++r) max = std::max<double>(max, z[entries_[r]]);
                double total = 0.0;
                for (size_t r = 0; r < visible; ++r) total += std::exp(z[entries_[r]] - max);
                for (size_t k = 0; k < num_candidates; ++k) {
                    const double p = std::exp(z[entries_[candidate_index_[k]]] - max) / total;
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
    const FullCacheManager& cache_;
    SeqId seq_;
    const ScoringPass& pass_;
    std::span<float> scores_;
    std::vector<int32_t> entries_;          // resident entry ids, ascending
    std::vector<int32_t> candidate_index_;  // per candidate, its index in entries_
};

}  // namespace

Status PruneScorer::run(SeqId seq, const ScoringPass& pass, std::span<float> scores) {
    SE_CHECK(scores.size() == pass.candidates.size());
    const auto context_len = static_cast<int32_t>(pass.context.size());
    const int32_t attached = cache_.attach_cached(seq, pass.ns, pass.context);
    if (attached != context_len) {
        cache_.release(seq);
        return not_found(fmt::format("the prefix cache holds {} of the {} tokens to score over",
                                     attached, context_len));
    }
    const auto num_queries = static_cast<int32_t>(pass.queries.size());
    const StepPlan plan{.phase = StepPhase::kPrefill,
                        .seqs = {{.seq_id = seq,
                                  .num_new_tokens = num_queries,
                                  .num_computed_tokens = context_len,
                                  .samples = false}}};
    if (Status s = controller_.begin_step(plan); !s.ok()) {
        cache_.release(seq);
        return resource_exhausted(fmt::format(
            "no KV room for the {} tokens of the scoring pass: {}", num_queries, s.message()));
    }
    std::vector<int32_t> positions(pass.queries.size());
    std::iota(positions.begin(), positions.end(), context_len);
    ScoringAttention attention(controller_, cache_, seq, pass, scores);
    model_.forward({.token_ids = pass.queries, .positions = positions, .logit_rows = {}}, attention,
                   TensorView{DType::kF32, nullptr, 0, model_.config().vocab_size});
    controller_.end_step();
    cache_.release(seq);
    return {};
}

}  // namespace se
