// The Llama-family decoder forward pass: Llama 3.x (llama3 RoPE scaling), SmolLM2, Qwen2.5
// (q/k/v biases) and Qwen3 (per-head q/k RMSNorm). Differences are config flags, not branches on
// model names.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backend/communicator.h"
#include "backend/ops.h"
#include "core/expected.h"
#include "model/decoder_weights.h"
#include "model/forward_batch.h"
#include "model/layer_attention.h"
#include "model/model_config.h"
#include "model/model_shard.h"

namespace se {

class DecoderModel {
  public:
    // `weights` must outlive the model. Fails when a weight is missing or misshapen.
    static Expected<std::unique_ptr<DecoderModel>> create(const ModelConfig& config,
                                                          const WeightStore& weights, Ops& ops);
    // One rank of a tensor-parallel group (model_shard.h): `weights` are the rank's
    // (shard_weights) and `comm` its group, whose collectives the forward pass calls.
    static Expected<std::unique_ptr<DecoderModel>> create(const ModelShard& shard,
                                                          const WeightStore& weights, Ops& ops,
                                                          Communicator* comm);

    // The whole model's shape (the logits are the whole vocabulary's on every rank).
    const ModelConfig& config() const { return shard_.full; }
    // The rank's part (the whole model without tensor parallelism).
    const ModelShard& shard() const { return shard_; }
    Ops& ops() const { return ops_; }

    // Allocates the activations of steps of up to `max_tokens` tokens and `max_logit_rows`
    // sampled rows up front (in the backend's memory), so that no step allocates.
    Status reserve(int64_t max_tokens, int64_t max_logit_rows);

    // Runs every layer over batch.token_ids and writes
    // logits f32 [batch.logit_rows.size(), vocab] (in the backend's memory), between
    // Ops::begin_step(batch.shape) and Ops::end_forward(): the logits are ready once the backend
    // has run what was issued (its next synchronising copy).
    void forward(const ForwardBatch& batch, LayerAttention& attention, TensorView logits);

  private:
    DecoderModel(ModelShard shard, DecoderWeights weights, Ops& ops, Communicator* comm);

    // Activations for a step of n tokens; grown on demand, reused across steps. x (the residual
    // stream) is F32, the others the backend's activation dtype.
    struct Activations {
        int64_t capacity = 0;
        BackendBuffer buffer;
        TensorView x, h, q, k, v, attn, proj, gate, up;
        // h's rows still to be scaled by 1 / rms, where the op that wrote h left that to the
        // projection that reads it (Ops::matmul_add_rms_norm); empty: h is final.
        RmsScale h_scale;
        // Tensor parallelism where act is not F32: the row-parallel projections' partial
        // products, all-reduced in F32 and rounded to act once (as one rank's matmul rounds).
        TensorView proj_sum;
    };
    Status ensure_activations(int64_t num_tokens);
    Status ensure_final_hidden(int64_t num_rows);
    Status ensure_shard_logits(int64_t num_rows);
    void attention_block(int32_t layer, const ForwardBatch& batch, LayerAttention& attention);
    // q (rotated) in act.q and this step's k and v stored, where the layer has a bias or q/k
    // norms between its projections and RoPE, or its method stores the keys itself.
    void attention_input(int32_t layer, const ForwardBatch& batch, LayerAttention& attention,
                         const std::optional<PlainKvStore>& plain);
    RopeArgs rope_args() const;
    // Ends with the residual add, fused with the next layer's input norm when there is one.
    void mlp_block(int32_t layer);
    void lm_head(const ForwardBatch& batch, TensorView logits);
    // Final norm and LM head of the logit rows into logits [rows, the rank's vocabulary rows].
    void lm_head_rows(const ForwardBatch& batch, TensorView logits);
    // y = x · w^T of a row-parallel projection (o, down), completed across the group; returns
    // the tensor holding it (act.proj, or F32 act.proj_sum; both are what add_rms_norm takes).
    // `bias` (o's, may be empty) is added once.
    TensorView row_parallel(const ConstTensorView& x, const ConstTensorView& w,
                            const ConstTensorView& bias);
    // residual (act.x) += x · w^T of a row-parallel projection without a bias, then act.h =
    // rms_norm(act.x) with norm_weight (act.h_scale set to what is left of it): one op on one
    // rank, row_parallel and add_rms_norm across a group.
    void row_parallel_add_norm(const ConstTensorView& x, const ConstTensorView& w,
                               const ConstTensorView& norm_weight);

    ModelShard shard_;
    const ModelConfig& config_;  // shard_.local: the dimensions this rank computes
    DecoderWeights weights_;
    Ops& ops_;
    Communicator* comm_ = nullptr;  // null: one rank
    bool sums_in_f32_ = false;      // row-parallel sums in F32 (act.proj_sum)
    BackendBuffer shard_logits_;    // f32 [num_logit_rows, the rank's vocabulary rows]
    std::vector<float> inv_freq_;   // f32 [head_dim / 2]
    Activations act_;
    BackendBuffer final_hidden_;  // act [num_logit_rows, hidden]
};

}  // namespace se
