// What the architecture code asks of the attention state in each layer. It is implemented above
// model/ (by the sparse controller), so the model never knows how a method stores, selects or
// evicts KV entries. Call order per layer: plain_store, then store unless plain_store gave a
// place -> attend -> (MLP) -> on_layer_end.
#pragma once

#include <cstdint>
#include <optional>

#include "backend/kv_layout.h"
#include "core/tensor_view.h"

namespace se {

class LayerAttention {
  public:
    virtual ~LayerAttention() = default;

    // Where this step's keys and values of `layer` go when the method keeps them as they are
    // (PlainKvStore). The model then writes them itself, in the kernel that rotates the keys
    // (Ops::qk_norm_rope_store), and does not call store. Default: none.
    virtual std::optional<PlainKvStore> plain_store(int32_t layer) { return std::nullopt; }

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
