// What the architecture code asks of the attention state in each layer. It is implemented above
// model/ (by the sparse controller), so the model never knows how a method stores, selects or
// evicts KV entries. Call order per layer: store -> attend -> (MLP) -> on_layer_end.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace se {

class LayerAttention {
  public:
    virtual ~LayerAttention() = default;

    // Keeps this step's keys and values (after RoPE).
    // k, v: f32 [n, num_kv_heads * head_dim], row i belongs to the step's token i.
    virtual void store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) = 0;

    // out f32 [n, num_heads * head_dim] = attention of q f32 [n, num_heads * head_dim] over the
    // entries the method selects for this layer (select -> view -> kernel).
    virtual void attend(int32_t layer, const ConstTensorView& q, TensorView out) = 0;

    // The layer's residual stream is final for this step.
    virtual void on_layer_end(int32_t layer) = 0;
};

}  // namespace se
