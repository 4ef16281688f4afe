// Quest: query-aware page selection over full-history KV. Pages are KV blocks; each block keeps
// the elementwise min and max of its keys (QuestCacheManager); at decode every layer from
// `skip_layers` on reads the top pages by the upper bound of q . k plus the newest page.
// Token-shared: one page set per (sequence, layer), the page score taking the max over all
// query heads, as PySE does; under tensor parallelism over every rank's heads (a max reduction),
// so every rank reads the same pages. README.md gives the rule and the knobs.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "methods/quest/quest_cache_manager.h"
#include "methods/quest/quest_page_score.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"
#include "sparse/rank_reduce.h"
#include "sparse/ranking.h"

namespace se {
namespace {

struct QuestKnobs {
    int32_t budget = 1024;    // B: tokens a sparse layer reads
    int32_t skip_layers = 2;  // layers [0, skip_layers) always read everything
};

class QuestRuntime final : public MethodRuntime {
  public:
    QuestRuntime(QuestKnobs knobs, QuestCacheManager& cache, Communicator* comm)
        : knobs_(knobs),
          cache_(cache),
          comm_(comm),
          block_size_(cache.kv().layout().block_size),
          num_kv_heads_(cache.kv().layout().num_kv_heads),
          head_dim_(cache.kv().layout().head_dim),
          num_pages_(std::max(3, knobs.budget / block_size_)) {}

    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }

    Selection select_decode(int32_t layer, const ConstTensorView& q) override {
        if (layer < knobs_.skip_layers) return Selection::full();
        std::vector<SeqPick> picks;
        for (const PagedSeq& seq : cache_.step_seqs()) picks.push_back(pick(layer, q, seq));
        return Selection::pages(std::move(picks));
    }

  private:
    // K = max(3, B / P) pages: the newest page (partial or not) and the top K - 1 of the others
    // by u_p = max over query heads h of sum_d max(q_hd M_pd, q_hd m_pd), KV head g(h).
    //
    //   pages:  [ 0 | 1 | ... | n-2 ]  [ n-1 ]   <- holds the newest entry (the decode token)
    //            candidates: top K-1     always read
    SeqPick pick(int32_t layer, const ConstTensorView& q, const PagedSeq& seq) {
        const int32_t len = seq.kv_len;
        if (len <= std::max(knobs_.budget, num_pages_ * block_size_)) return SeqPick::every();
        const int32_t n = (len + block_size_ - 1) / block_size_;
        const auto num_heads = static_cast<int32_t>(q.cols / head_dim_);
        const int32_t group = num_heads / num_kv_heads_;
        const float* row = q.f32() + int64_t{seq.q_start} * q.cols;
        scores_.assign(static_cast<size_t>(n - 1), -std::numeric_limits<float>::infinity());
        for (int32_t p = 0; p + 1 < n; ++p) {
            const int32_t block = seq.block_table[p];
            for (int32_t h = 0; h < num_heads; ++h) {
                const int32_t g = h / group;
                const float u = page_upper_bound(row + int64_t{h} * head_dim_,
                                                 cache_.key_min(layer, block, g).data(),
                                                 cache_.key_max(layer, block, g).data(), head_dim_);
                scores_[p] = std::max(scores_[p], u);
            }
        }
        // The max over this rank's heads, then over every rank's (exact).
        max_over_ranks(comm_, scores_);
        std::vector<int32_t> pages = top_k(scores_, num_pages_ - 1);
        pages.push_back(n - 1);
        return SeqPick::only(std::move(pages));
    }

    QuestKnobs knobs_;
    QuestCacheManager& cache_;
    Communicator* comm_ = nullptr;  // the tensor-parallel group (null: one rank)
    int32_t block_size_ = 0;
    int32_t num_kv_heads_ = 0;
    int32_t head_dim_ = 0;
    int32_t num_pages_ = 0;      // K
    std::vector<float> scores_;  // f32 [pages - 1], reused across sequences
};

Expected<Method> create_quest(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(Knobs knobs,
                        Knobs::parse("quest", context.knobs, {"budget", "skip_layers"}));
    const int32_t num_layers = context.model.num_layers;
    QuestKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_ASSIGN_OR_RETURN(
        k.skip_layers,
        knobs.integer("skip_layers", std::min(k.skip_layers, num_layers), 0, num_layers));
    const int64_t summary_bytes =
        QuestCacheManager::summary_bytes_per_block(num_layers, context.kv_layout);
    SE_ASSIGN_OR_RETURN(PagedKvStore store, make_full_kv_store(context, summary_bytes));
    auto cache = std::make_unique<QuestCacheManager>(context.ops, std::move(store), num_layers,
                                                     context.enable_prefix_caching);
    auto runtime = std::make_unique<QuestRuntime>(k, *cache, context.comm);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"quest", &create_quest};

}  // namespace
}  // namespace se
