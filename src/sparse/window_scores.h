// Observation-window attention mass: how much the last w queries of a sequence attend to each of
// its resident entries in one layer, reduced to one score per entry that every head shares, then
// pooled so that neighbours of a strong entry rank with it. For methods that keep the entries a
// window of recent queries looks at (scored once at the end of the prompt, or again in decode).
//
//   W          the window: the last w query rows of the sequence in the layer (QueryWindow keeps
//              them across prefill chunks and decode steps); row i holds token position p_i
//   P_{h,i,j}  softmax_j of scale * q_{h,i} . k_{g(h),j} over EVERY resident entry j visible to
//              row i (entry position <= p_i), as the attention row itself normalises (KeyScorer)
//   m_g[j]   = 1 / (|W| G) * sum_{i in W} sum_{h : g(h) = g} P_{h,i,j}     window and group mean
//   r[j]     = max_g m_g[j]                                                 one score per entry
//   s        = pool1d(r, kernel, kind)                                      (ranking.h)
//
// for the candidates j in [0, num_candidates). The group mean is what a per-KV-head cache would
// rank by; the max over KV heads makes one token-shared set keep what any KV head needs. With
// G = 1 it is the plain max over heads.
//
// Tensor parallelism: a rank holds whole KV groups, so m_g is rank-local (G is the same on every
// rank); r[j] is the max over every rank's KV heads (a kMax reduction before pooling, exact), so
// every rank keeps the same entries, those of a single rank.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/communicator.h"
#include "backend/ops.h"
#include "sparse/key_scorer.h"
#include "sparse/ranking.h"

namespace se {

// The last `capacity` query rows one sequence produced in one layer, oldest first, with the token
// position of each.
class QueryWindow {
  public:
    QueryWindow(int32_t capacity, int32_t width);

    // Appends rows f32 [num_rows, width] of the consecutive tokens first_position, ...; only the
    // last `capacity` rows of everything pushed stay.
    void push(const float* rows, int32_t num_rows, int32_t first_position);

    int32_t size() const { return static_cast<int32_t>(positions_.size()); }
    int32_t width() const { return width_; }
    const float* row(int32_t i) const { return rows_.data() + int64_t{i} * width_; }
    int32_t position(int32_t i) const { return positions_[i]; }

  private:
    int32_t capacity_ = 0;
    int32_t width_ = 0;
    std::vector<float> rows_;         // f32 [size, width]
    std::vector<int32_t> positions_;  // i32 [size], ascending
};

// m f32 [num_kv_heads, num_candidates] (row g at g * num_candidates): the window and group mean
// of P above. keys holds the sequence's resident entries of the layer; entry_positions i32
// [keys.num_entries()] is the token position of each, ascending.
std::vector<float> window_group_mass(const KeyScorer& keys,
                                     std::span<const int32_t> entry_positions,
                                     const QueryWindow& window, int32_t num_candidates,
                                     const AttentionArgs& args);

// s f32 [num_candidates]: the max over KV heads of window_group_mass's rows, pooled; over every
// rank's KV heads when `comm` is a tensor-parallel group (null: one rank).
std::vector<float> shared_window_scores(std::span<const float> group_mass, int32_t num_kv_heads,
                                        int32_t kernel, PoolKind pool, Communicator* comm);

}  // namespace se
