// Ada-KV's split of one layer's budget across KV heads: every head gets a floor, the rest follows
// where the layer's highest scores are.
//
//   b = base (per-head budget without the window), T = H_kv * b, f = floor(alpha * b)
//   n_g   = how many of the top T scores over all heads' [H_kv * (L - w)] entries are head g's
//           (ties to the lower (head, entry) index)
//   cap_g = round((1 - alpha) * n_g + f)     (half to even, as torch.round)
//
// sum_g cap_g = (1 - alpha) T + H_kv f, within H_kv of T (floor) plus H_kv / 2 (rounding).
//
// Tensor parallelism: H_kv counts every rank's KV heads. Each rank scores its own heads; the
// scores are gathered (exactly) so every rank computes the same caps, those of a single rank, and
// keeps its own heads' part.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/communicator.h"

namespace se::adakv {

// cap_g per head; scores[g] f32 [L - w] (the same length for every head), base >= 1, alpha in
// [0, 1].
std::vector<int32_t> adaptive_head_caps(std::span<const std::vector<float>> scores, int32_t base,
                                        double alpha);

// cap_g of the heads this rank holds, split over every rank's heads: scores[g] of this rank's
// heads (each rank as many, of one length) are gathered through `comm`, rank r's heads coming at
// r * scores.size(), the caps are computed for all of them and this rank's are returned. Null
// comm: this rank holds every head (adaptive_head_caps).
std::vector<int32_t> rank_head_caps(std::span<const std::vector<float>> scores, int32_t base,
                                    double alpha, Communicator* comm);

}  // namespace se::adakv
