// Ada-KV's split of one layer's budget across KV heads: every head gets a floor, the rest follows
// where the layer's highest scores are.
//
//   b = base (per-head budget without the window), T = H_kv * b, f = floor(alpha * b)
//   n_g   = how many of the top T scores over all heads' [H_kv * (L - w)] entries are head g's
//           (ties to the lower (head, entry) index)
//   cap_g = round((1 - alpha) * n_g + f)     (half to even, as torch.round)
//
// sum_g cap_g = (1 - alpha) T + H_kv f, within H_kv of T (floor) plus H_kv / 2 (rounding).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace se::adakv {

// cap_g per head; scores[g] f32 [L - w] (the same length for every head), base >= 1, alpha in
// [0, 1].
std::vector<int32_t> adaptive_head_caps(std::span<const std::vector<float>> scores, int32_t base,
                                        double alpha);

}  // namespace se::adakv
