// Turns a sparse Selection into the payload a kernel reads, over the step's per-sequence paged
// metadata (one PagedSeq per step sequence, in plan order). Shared by every cache manager that
// stores entries in paged blocks; owns the lists and tables the payload points into, which stay
// valid until the next build.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_layout.h"
#include "sparse/selection.h"

namespace se {

class ViewBuilder {
  public:
    // kEntries -> the listed entries of each sequence (`all` lists every resident entry).
    PagedKvGather gather(const PagedKvCache& cache, std::span<const PagedSeq> seqs,
                         const Selection& selection);

    // A full read where sequence i reads exactly resident[i] (ascending entry ids, its own new
    // entries last): for sequences with holes (a pruned cached prefix). `resident` must outlive
    // the payload.
    PagedKvGather listed(const PagedKvCache& cache, std::span<const PagedSeq> seqs,
                         std::span<const std::vector<int32_t>> resident);

    // kPages -> a paged read whose block tables hold the listed pages; the last listed page
    // keeps its fill (kv_len counts every other page as full).
    PagedKvRead pages(const PagedKvCache& cache, std::span<const PagedSeq> seqs,
                      const Selection& selection);

  private:
    std::vector<std::vector<int32_t>> lists_;
    std::vector<GatherSeq> gather_seqs_;
    std::vector<std::vector<int32_t>> tables_;
    std::vector<PagedSeq> page_seqs_;
};

}  // namespace se
