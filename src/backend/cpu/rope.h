// Rotary position embedding. The cos/sin table of a step is computed once and reused by every
// rope call with the same positions (q and k of all layers), as HF computes it: the angle
// position * inv_freq[i] rounded to f32, then cos and sin of that f32.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/ops.h"
#include "core/tensor_view.h"

namespace se::cpu {

class RopeTable {
  public:
    // Makes the table match these positions and frequencies (recomputing it only when they
    // differ from the previous call), using up to num_threads threads.
    void update(std::span<const int32_t> positions, std::span<const float> inv_freq,
                RopeStyle style, int32_t num_threads);

    // Row i: f32 [2, rotary_dim]. Neox: cos [half], sin [half] at offsets 0 and half.
    // Interleaved: cos per element [rotary_dim], then sin per element with the sign of its
    // term (-sin for even elements, +sin for odd ones).
    const float* row(int64_t i) const { return table_.data() + i * 2 * rotary_dim_; }
    int32_t rotary_dim() const { return rotary_dim_; }

  private:
    void fill_row(int64_t i);

    std::vector<int32_t> positions_;  // i32 [n] of the table
    std::vector<float> inv_freq_;     // f32 [rotary_dim / 2] of the table
    RopeStyle style_ = RopeStyle::kNeox;
    int32_t rotary_dim_ = 0;
    std::vector<float> table_;  // f32 [n, 2, rotary_dim]
};

// Rotates every head of row x f32 [num_heads * head_dim] in place with table row `cos_sin`.
struct RopeRow {
    float* x = nullptr;
    int64_t num_heads = 0;
    int32_t head_dim = 0;
    int32_t rotary_dim = 0;
    RopeStyle style = RopeStyle::kNeox;
    const float* cos_sin = nullptr;  // f32 [2, rotary_dim]: a RopeTable row
};
void rope_row(const RopeRow& r);

}  // namespace se::cpu
