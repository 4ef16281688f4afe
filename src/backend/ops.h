// The operations a model's forward pass is made of. One implementation per backend (cpu/, cuda/);
// the architecture code calls only these, on tensors in the backend's memory (backend_memory.h).
// Shapes: `dtype [rows, cols]`; n = tokens in the step, d = hidden size. "act" is the backend's
// activation dtype (activation_dtype()): F32 on the CPU, BF16 on a GPU. The residual stream and
// logits are F32 everywhere.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "backend/backend_memory.h"
#include "backend/kv_layout.h"
#include "backend/rms_scale.h"
#include "backend/sampling_rows.h"
#include "backend/step_shape.h"
#include "core/check.h"
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

// Per-head RMSNorm weights of q and k (Qwen3), f32 [1, head_dim] each; empty views: no norm.
struct QkNorm {
    ConstTensorView q;
    ConstTensorView k;
    float eps = 1e-6f;
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

    // A forward pass of this shape starts: host-side inputs of the previous one (ids, positions,
    // slots, KV metadata) are no longer read. Optional (the default does nothing).
    virtual void begin_step(const StepShape& shape) {}

    // The forward pass begun last has issued its last op (the logits are written once the
    // backend gets there); what follows (sampling, copies) is outside it. Called by whoever
    // called begin_step, once per begin_step. Optional (the default does nothing).
    virtual void end_forward() {}

    // Makes the calling thread's work go to this backend's device (a GPU backend makes its GPU
    // current): called by each thread of a tensor-parallel group before it uses its rank's ops.
    // Optional (the default does nothing).
    virtual void bind_thread() {}

    // Whether this backend's kernels read KV this way (an unsupported kind fails at start-up).
    virtual bool reads(KvReadKind kind) const { return true; }

    // x f32 [n, d] = rows ids[i] of table (any weight dtype) [vocab, d]
    virtual void embedding(std::span<const int32_t> ids, const ConstTensorView& table,
                           TensorView y) = 0;

    // y f32 [n, d]: row i = table[ids[i] - first_id] where first_id <= ids[i] < first_id +
    // table.rows, else zeros: this rank's part of a vocabulary-parallel embedding (the group's
    // all-reduce adds the parts). ids are the full vocabulary's.
    virtual void embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                                 int32_t first_id, TensorView y) = 0;

    // y [n, out] = x act [n, in] · w^T, w a weight [out, in]; y is act, or F32 (logits); y must
    // not alias x.
    virtual void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) = 0;

    // The model will call matmul(x [m, w.cols], w, y [m, w.rows] of y_dtype) with m up to max_m:
    // a backend that picks GEMM algorithms per shape does so now, at start-up.
    virtual Status prepare_matmul(const ConstTensorView& w, DType y_dtype, int64_t max_m) {
        return {};
    }

    // ys[i] = x · ws[i]^T for each i: the projections that read the same input (q, k, v; gate,
    // up), which a backend may run as one kernel. Each ys[i] as in matmul. x_scale: what
    // matmul_add_rms_norm returned with x (x's rows still to be scaled), or empty; only a backend
    // whose matmul_add_rms_norm returns a non-empty one takes a non-empty one (here and in
    // project_silu_mul and project_rope_store).
    virtual void project(const ConstTensorView& x, const RmsScale& x_scale,
                         std::span<const ConstTensorView> ws, std::span<const TensorView> ys) {
        SE_CHECK(ws.size() == ys.size());
        SE_CHECK(x_scale.empty(), "%s: project got a pending RMS scale",
                 std::string(name()).c_str());
        for (size_t i = 0; i < ws.size(); ++i) matmul(x, ws[i], ys[i]);
    }

    // y act [n, c] = silu(x · ws[0]^T) * (x · ws[1]^T): the gated MLP's first half, gate and up
    // weights [c, in]. ys (gate, up) [n, c] are the two products' storage, which the default
    // fills (project, then silu_mul) and a backend that fuses the three may leave untouched; y
    // may alias ys[0] or ys[1].
    virtual void project_silu_mul(const ConstTensorView& x, const RmsScale& x_scale,
                                  std::span<const ConstTensorView> ws,
                                  std::span<const TensorView> ys, TensorView y) {
        SE_CHECK(ws.size() == 2 && ys.size() == 2);
        project(x, x_scale, ws, ys);
        silu_mul(ys[0], ys[1], y);
    }

    // y act [n, c] += bias f32 [1, c] broadcast over rows
    virtual void add_bias(TensorView y, const ConstTensorView& bias) = 0;

    // y f32 [n, c] += x act [n, c] (the residual stream takes a sublayer's output). x may also be
    // F32 (a tensor-parallel all-reduce's sum): it is rounded to act first, as a matmul writing
    // act would have rounded it.
    virtual void add(TensorView y, const ConstTensorView& x) = 0;

    // y act [n, c] = x f32 [n, c] / rms(x) * weight f32 [1, c]; y may alias x on the CPU.
    virtual void rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                          TensorView y) = 0;

    // residual f32 [n, c] += x act [n, c], then y act [n, c] = rms_norm(residual): the seam
    // between sublayers, one kernel where the backend fuses it. x may be F32, as in add().
    virtual void add_rms_norm(TensorView residual, const ConstTensorView& x,
                              const ConstTensorView& weight, float eps, TensorView y) {
        add(residual, x);
        rms_norm(residual, weight, eps, y);
    }

    // A row-parallel projection and the seam after it: residual f32 [n, c] += x act [n, in] · w^T
    // (w [c, in]; the product rounded to act, as matmul stores it), then y act [n, c] =
    // rms_norm(residual) with weight, as matmul into product (act [n, c], storage the default
    // fills and a backend that fuses may leave untouched) and add_rms_norm would. A backend may
    // instead leave y as residual ⊙ weight and return the rows' 1 / rms (rms_scale.h), which
    // the caller must hand, with y, to the projection that reads y. Empty return: y is final.
    // The returned view stays valid until the next call.
    virtual RmsScale matmul_add_rms_norm(const ConstTensorView& x, const ConstTensorView& w,
                                         TensorView product, TensorView residual,
                                         const ConstTensorView& weight, float eps, TensorView y) {
        matmul(x, w, product);
        add_rms_norm(residual, product, weight, eps, y);
        return {};
    }

    // y act [i, c] = rms_norm(x f32 [rows[i], c]) for each listed row of x (host indices): the
    // final norm of the rows whose logits are wanted.
    virtual void rms_norm_rows(const ConstTensorView& x, std::span<const int32_t> rows,
                               const ConstTensorView& weight, float eps, TensorView y) {
        SE_CHECK(y.rows == static_cast<int64_t>(rows.size()));
        for (size_t i = 0; i < rows.size(); ++i) {
            const ConstTensorView row(
                x.dtype, static_cast<const uint8_t*>(x.data) + rows[i] * x.row_bytes(), 1, x.cols);
            rms_norm(row, weight, eps, y.slice_rows(static_cast<int64_t>(i), 1));
        }
    }

    // Per-head RMSNorm in place: x act [n, heads * head_dim], weight f32 [1, head_dim].
    virtual void head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                               float eps) = 0;

    // Rotary embedding in place on x act [n, heads * head_dim] at positions i32 [n] (host).
    virtual void rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) = 0;

    // A layer's q and k before attention, in place: per-head RMSNorm with norm.q / norm.k where
    // given (empty views: none), then RoPE on both; one kernel where the backend fuses it.
    virtual void qk_norm_rope(TensorView q, TensorView k, std::span<const int32_t> positions,
                              const RopeArgs& args, const QkNorm& norm) {
        if (!norm.q.empty()) head_rms_norm(q, args.head_dim, norm.q, norm.eps);
        if (!norm.k.empty()) head_rms_norm(k, args.head_dim, norm.k, norm.eps);
        rope(q, positions, args);
        rope(k, positions, args);
    }

    // qk_norm_rope, then store_kv of the rotated k and v (act [n, num_kv_heads * head_dim]):
    // one kernel where the backend fuses them.
    virtual void qk_norm_rope_store(TensorView q, TensorView k, const ConstTensorView& v,
                                    std::span<const int32_t> positions, const RopeArgs& args,
                                    const QkNorm& norm, const KvWrite& write,
                                    const PagedKvCache& cache) {
        qk_norm_rope(q, k, positions, args, norm);
        store_kv(k, v, write, cache);
    }

    // A decode step's attention input without q/k norms: the q, k and v projections of x
    // (ws: their weights, ys: their products' storage, as in project), then qk_norm_rope_store
    // without norms (RoPE on q and k, the rotated k and v into the cache); one kernel where the
    // backend fuses them. ys[0] receives the rotated q; ys[1] and ys[2] (k, v) are storage that
    // the default fills and a backend that fuses may leave untouched.
    virtual void project_rope_store(const ConstTensorView& x, const RmsScale& x_scale,
                                    std::span<const ConstTensorView> ws,
                                    std::span<const TensorView> ys,
                                    std::span<const int32_t> positions, const RopeArgs& args,
                                    const KvWrite& write, const PagedKvCache& cache) {
        SE_CHECK(ws.size() == 3 && ys.size() == 3);
        project(x, x_scale, ws, ys);
        qk_norm_rope_store(ys[0], ys[1], ys[2], positions, args, QkNorm{}, write, cache);
    }

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

    // Whether sample() works on this backend; otherwise the engine copies the logits to the host
    // and samples there.
    virtual bool samples_on_device() const { return false; }

    // tokens[i] = the token row i of logits f32 [rows, vocab] (this backend's memory) draws as
    // rows[i] says (sampling_rows.h), after `edits` are applied to the logits in place.
    virtual Status sample(const TensorView& logits, std::span<const LogitEdit> edits,
                          std::span<const RowSampling> rows, std::span<int32_t> tokens) {
        return unsupported(std::string(name()) + " backend samples on the host");
    }

    // Overlapped decode steps (engine.h): whether this backend can queue a forward pass while the
    // tokens of the one before are still on their way to the host.
    virtual bool overlaps_steps() const { return false; }

    // sample() without the wait: queues the draws and the tokens' copy to the host, which
    // sampled_tokens() waits for and returns (the oldest queued sampling not yet taken; at most
    // two are outstanding). Until the next sampling is queued, a forward pass reads row r of
    // this one's tokens wherever its ids hold fed_token_id(r) (sampling_rows.h).
    virtual Status sample_async(const TensorView& logits, std::span<const LogitEdit> edits,
                                std::span<const RowSampling> rows) {
        return unsupported(std::string(name()) + " backend does not overlap steps");
    }
    virtual Status sampled_tokens(std::span<int32_t> tokens) {
        return unsupported(std::string(name()) + " backend does not overlap steps");
    }

    // Copies the K and V of entry slot from[i] to slot to[i], in order i = 0, 1, ...; a slot
    // may be written only after it was read (compaction moves entries toward the front).
    virtual void move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                         std::span<const int64_t> to) = 0;
};

}  // namespace se
