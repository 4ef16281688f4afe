// The operations a model's forward pass is made of. One implementation per backend (cpu/, cuda/);
// the architecture code calls only these, on tensors in the backend's memory (backend_memory.h).
// Shapes: `dtype [rows, cols]`; n = tokens in the step, d = hidden size. "act" is the backend's
// activation dtype (activation_dtype()): F32 on the CPU, BF16 on a GPU. The residual stream and
// logits are F32 everywhere.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend_memory.h"
#include "backend/kv_layout.h"
#include "core/tensor_view.h"

namespace se {

enum class RopeStyle : uint8_t {
    kNeox,         // rotate halves: pairs (i, i + rotary_dim/2), as HF transformers
    kInterleaved,  // rotate adjacent pairs (2i, 2i+1), as GGUF llama files after conversion
};

struct RopeArgs {
    std::span<const float> inv_freq;  // f32 [rotary_dim / 2], scaling already applied
    RopeStyle style = RopeStyle::kNeox;
    int32_t head_dim = 0;
};

struct AttentionArgs {
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;
    float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

// The ways a backend's attention kernels read paged KV.
enum class KvReadKind : uint8_t {
    kPaged,   // attention(): every entry of each sequence's block table, causal
    kGather,  // attention_gather(): listed entries of each sequence
};

class Ops : public BackendMemory {
  public:
    ~Ops() override = default;
    virtual std::string_view name() const = 0;

    // dtype of the tensors between the residual stream and the GEMMs (normed hidden states, q, k,
    // v, attention output, MLP activations): what matmul reads and writes.
    virtual DType activation_dtype() const { return DType::kF32; }

    // A forward pass starts: host-side inputs of the previous one (ids, positions, slots, KV
    // metadata) are no longer read.
    virtual void begin_step() {}

    // Whether this backend's kernels read KV this way (an unsupported kind fails at start-up).
    virtual bool reads(KvReadKind kind) const { return true; }

    // x f32 [n, d] = rows ids[i] of table (any weight dtype) [vocab, d]
    virtual void embedding(std::span<const int32_t> ids, const ConstTensorView& table,
                           TensorView y) = 0;

    // y [n, out] = x act [n, in] · w^T, w a weight [out, in]; y is act, or F32 (logits); y must
    // not alias x.
    virtual void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) = 0;

    // y act [n, c] += bias f32 [1, c] broadcast over rows
    virtual void add_bias(TensorView y, const ConstTensorView& bias) = 0;

    // y f32 [n, c] += x act [n, c] (the residual stream takes a sublayer's output)
    virtual void add(TensorView y, const ConstTensorView& x) = 0;

    // y act [n, c] = x f32 [n, c] / rms(x) * weight f32 [1, c]; y may alias x on the CPU.
    virtual void rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                          TensorView y) = 0;

    // residual f32 [n, c] += x act [n, c], then y act [n, c] = rms_norm(residual): the seam
    // between sublayers, one kernel where the backend fuses it.
    virtual void add_rms_norm(TensorView residual, const ConstTensorView& x,
                              const ConstTensorView& weight, float eps, TensorView y) {
        add(residual, x);
        rms_norm(residual, weight, eps, y);
    }

    // Per-head RMSNorm in place: x act [n, heads * head_dim], weight f32 [1, head_dim].
    virtual void head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                               float eps) = 0;

    // Rotary embedding in place on x act [n, heads * head_dim] at positions i32 [n] (host).
    virtual void rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) = 0;

    // y act [n, c] = silu(gate act [n, c]) * up act [n, c]; y may alias gate or up.
    virtual void silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) = 0;

    // Writes k, v act [n, num_kv_heads * head_dim] into the cache at write.slots (converting to
    // the cache dtype).
    virtual void store_kv(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                          const PagedKvCache& cache) = 0;

    // out act [n, num_heads * head_dim] = softmax(q k^T * scale) v over the entries each
    // sequence sees (causal, see kv_layout.h); q act [n, num_heads * head_dim]. Query head h
    // reads KV head h / (num_heads / num_kv_heads). Rows of sequences with kv_len 0 are zero.
    virtual void attention(const ConstTensorView& q, const PagedKvRead& kv,
                           const AttentionArgs& args, TensorView out) = 0;

    // out as above, but each sequence's rows read only the entries kv lists (causal over the
    // list, see kv_layout.h).
    virtual void attention_gather(const ConstTensorView& q, const PagedKvGather& kv,
                                  const AttentionArgs& args, TensorView out) = 0;

    // Copies the K and V of entry slot from[i] to slot to[i], in order i = 0, 1, ...; a slot
    // may be written only after it was read (compaction moves entries toward the front).
    virtual void move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                         std::span<const int64_t> to) = 0;
};

}  // namespace se
