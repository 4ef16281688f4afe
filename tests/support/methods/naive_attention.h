// Test-only: attention with none of the engine's machinery, for independent references. Keeps
// every stored K and V row in f32 with its token position, per layer; a query at position p
// attends (plain loops, double softmax) to every kept entry of its layer with position <= p.
// Entries can be erased by position, as pruning would drop them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/layer_attention.h"
#include "model/model_config.h"

namespace se::testing {

class NaiveAttention final : public LayerAttention {
  public:
    explicit NaiveAttention(const ModelConfig& config);

    // The positions of the next forward's tokens (call before each forward).
    void begin(std::span<const int32_t> positions);
    // Called from attend with (layer, row, q f32 [num_heads * head_dim]) for every query row.
    void on_query(std::function<void(int32_t, int32_t, const float*)> fn) {
        on_query_ = std::move(fn);
    }

    void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) override;
    void attend(int32_t layer, const ConstTensorView& q, TensorView out) override;
    void on_layer_end(int32_t) override {}

    // Drops the entries at `positions` in every layer.
    void erase(std::span<const int32_t> positions);

    // p[j] = softmax over the entries of `layer` with position <= `position` of head h's
    // q . k * scale, for entry j of entry_positions(layer) (0 where not visible).
    std::vector<double> probabilities(int32_t layer, const float* q, int32_t head,
                                      int32_t position) const;
    const std::vector<int32_t>& entry_positions(int32_t layer) const { return pos_[layer]; }

  private:
    int32_t num_heads_;
    int32_t num_kv_heads_;
    int32_t head_dim_;
    float scale_;
    std::vector<int32_t> step_positions_;
    std::vector<std::vector<int32_t>> pos_;  // [layer] position of each entry
    std::vector<std::vector<float>> k_;      // [layer] f32 [entries, num_kv_heads * head_dim]
    std::vector<std::vector<float>> v_;
    std::function<void(int32_t, int32_t, const float*)> on_query_;
};

}  // namespace se::testing
