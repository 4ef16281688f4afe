// SnapKV's observation-window score of one KV head's prompt entries, as Ada-SnapKV ranks them:
//
//   prompt entries:  [ 0 ............... L - w ) [ L - w ... L )   w = window
//                      scored                      the window's own entries (always kept)
//   a[j] = mean over window rows i and the group's query heads h of P_{h,i,j}
//          (P = causal softmax of row i over every entry it sees, j <= L - w + i)
//   s = maxpool_kernel(a)  over [0, L - w), stride 1, padding kernel / 2
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_layout.h"
#include "backend/ops.h"

namespace se::adakv {

// One KV head's prompt and the window's queries of its group.
struct HeadWindow {
    const PagedKvCache* cache = nullptr;   // a lane cache one KV head wide (num_kv_heads = 1)
    std::span<const int32_t> block_table;  // the lane's blocks
    int32_t num_entries = 0;               // L, the prompt's entries (no eviction yet)
    int32_t window = 0;                    // w < L
    const float* q = nullptr;  // f32 [w, q_stride]: row i = position L - w + i, group heads first
    int64_t q_stride = 0;
};

// s f32 [L - w]; args: num_heads = the group's query heads, num_kv_heads = 1.
std::vector<float> window_head_scores(const HeadWindow& head, const AttentionArgs& args,
                                      int32_t kernel);

}  // namespace se::adakv
