#include "sparse/view_builder.h"

#include <numeric>

#include "core/check.h"

namespace se {

PagedKvGather ViewBuilder::gather(const PagedKvCache& cache, std::span<const PagedSeq> seqs,
                                  const Selection& selection) {
    SE_CHECK(selection.kind == SelectionKind::kEntries);
    const size_t per_seq = selection.granularity == Granularity::kPerKvHead
                               ? static_cast<size_t>(cache.layout.num_kv_heads)
                               : 1;
    SE_CHECK(selection.picks.size() == seqs.size() * per_seq,
             "selection has %zu picks for %zu sequences x %zu lists", selection.picks.size(),
             seqs.size(), per_seq);
    lists_.assign(selection.picks.size(), {});
    for (size_t s = 0; s < seqs.size(); ++s) {
        for (size_t h = 0; h < per_seq; ++h) {
            const SeqPick& pick = selection.picks[s * per_seq + h];
            std::vector<int32_t>& list = lists_[s * per_seq + h];
            if (pick.all) {
                list.resize(static_cast<size_t>(seqs[s].kv_len));
                std::iota(list.begin(), list.end(), 0);
                continue;
            }
            for (size_t i = 0; i < pick.ids.size(); ++i) {
                SE_CHECK(pick.ids[i] >= 0 && pick.ids[i] < seqs[s].kv_len &&
                             (i == 0 || pick.ids[i] > pick.ids[i - 1]),
                         "selected entry %d of %d resident is out of range or out of order",
                         pick.ids[i], seqs[s].kv_len);
            }
            list = pick.ids;
        }
    }
    gather_seqs_.clear();
    for (size_t s = 0; s < seqs.size(); ++s) {
        SE_CHECK(seqs[s].q_len <= 1 || selection.picks[s * per_seq].all,
                 "a sparse selection for a sequence with %d query rows (decode rows only)",
                 seqs[s].q_len);
        gather_seqs_.push_back(
            {.q_start = seqs[s].q_start,
             .q_len = seqs[s].q_len,
             .block_table = seqs[s].block_table,
             .lists = std::span<const std::vector<int32_t>>(lists_).subspan(s * per_seq, per_seq)});
    }
    return {.cache = &cache, .seqs = gather_seqs_};
}

PagedKvGather ViewBuilder::listed(const PagedKvCache& cache, std::span<const PagedSeq> seqs,
                                  std::span<const std::vector<int32_t>> resident) {
    SE_CHECK(resident.size() == seqs.size(), "%zu entry lists for %zu sequences", resident.size(),
             seqs.size());
    gather_seqs_.clear();
    for (size_t s = 0; s < seqs.size(); ++s) {
        gather_seqs_.push_back({.q_start = seqs[s].q_start,
                                .q_len = seqs[s].q_len,
                                .block_table = seqs[s].block_table,
                                .lists = resident.subspan(s, 1)});
    }
    return {.cache = &cache, .seqs = gather_seqs_};
}

PagedKvRead ViewBuilder::pages(const PagedKvCache& cache, std::span<const PagedSeq> seqs,
                               const Selection& selection) {
    SE_CHECK(
        selection.kind == SelectionKind::kPages && selection.granularity == Granularity::kShared,
        "page selections are token-shared");
    SE_CHECK(selection.picks.size() == seqs.size(), "selection has %zu picks for %zu sequences",
             selection.picks.size(), seqs.size());
    const int32_t bs = cache.layout.block_size;
    tables_.assign(seqs.size(), {});
    page_seqs_.assign(seqs.begin(), seqs.end());
    for (size_t s = 0; s < seqs.size(); ++s) {
        const SeqPick& pick = selection.picks[s];
        if (pick.all) continue;
        const PagedSeq& seq = seqs[s];
        SE_CHECK(seq.q_len <= 1, "a page selection for a sequence with %d query rows", seq.q_len);
        const int32_t num_pages = (seq.kv_len + bs - 1) / bs;
        int32_t kv_len = 0;
        for (size_t i = 0; i < pick.ids.size(); ++i) {
            const int32_t p = pick.ids[i];
            SE_CHECK(p >= 0 && p < num_pages && (i == 0 || p > pick.ids[i - 1]),
                     "selected page %d of %d is out of range or out of order", p, num_pages);
            tables_[s].push_back(seq.block_table[p]);
            kv_len += std::min(bs, seq.kv_len - p * bs);
            SE_CHECK(i + 1 == pick.ids.size() || seq.kv_len - p * bs >= bs,
                     "only the last selected page may be partial");
        }
        SE_CHECK(pick.ids.empty() || pick.ids.back() == num_pages - 1,
                 "a page selection must end with the page holding the newest entry");
        page_seqs_[s].kv_len = kv_len;
        page_seqs_[s].block_table = tables_[s];
    }
    return {.cache = &cache, .seqs = page_seqs_};
}

}  // namespace se
