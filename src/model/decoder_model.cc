#include "model/decoder_model.h"

#include <algorithm>
#include <optional>

namespace se {
namespace {

// Engines reserve() the largest step up front; growing later is a fallback for direct users of
// the model (tests), where running out of memory is fatal.
void must(const Status& status) {
    SE_CHECK(status.ok(), "%s", status.to_string().c_str());
}

}  // namespace

Expected<std::unique_ptr<DecoderModel>> DecoderModel::create(const ModelConfig& config,
                                                             const WeightStore& weights, Ops& ops) {
    SE_RETURN_IF_ERROR(config.validate());
    SE_ASSIGN_OR_RETURN(ModelShard whole, shard_model(config, 0, 1));
    return create(whole, weights, ops, nullptr);
}

Expected<std::unique_ptr<DecoderModel>> DecoderModel::create(const ModelShard& shard,
                                                             const WeightStore& weights, Ops& ops,
                                                             Communicator* comm) {
    SE_RETURN_IF_ERROR(shard.full.validate());
    SE_CHECK(shard.size == 1 ||
                 (comm != nullptr && comm->size() == shard.size && comm->rank() == shard.rank),
             "rank %d of %d needs its group's communicator", shard.rank, shard.size);
    SE_ASSIGN_OR_RETURN(DecoderWeights bound, bind_decoder_weights(shard.local, weights));
    return std::unique_ptr<DecoderModel>(
        new DecoderModel(shard, std::move(bound), ops, shard.size > 1 ? comm : nullptr));
}

DecoderModel::DecoderModel(ModelShard shard, DecoderWeights weights, Ops& ops, Communicator* comm)
    : shard_(std::move(shard)),
      config_(shard_.local),
      weights_(std::move(weights)),
      ops_(ops),
      comm_(comm),
      inv_freq_(rope_inv_freq(shard_.local)) {
    // Biases are added in act: the rare o bias keeps the sum in act too.
    sums_in_f32_ = comm_ != nullptr && ops_.activation_dtype() != DType::kF32 &&
                   std::all_of(weights_.layers.begin(), weights_.layers.end(),
                               [](const DecoderLayerWeights& w) { return w.o_bias.empty(); });
}

Status DecoderModel::reserve(int64_t max_tokens, int64_t max_logit_rows) {
    SE_RETURN_IF_ERROR(ensure_activations(max_tokens));
    // Every layer has the same shapes: the first one's weights stand for all.
    const DecoderLayerWeights& w = weights_.layers.front();
    const DType act = ops_.activation_dtype();
    for (const ConstTensorView* weight :
         {&w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.gate_proj, &w.up_proj, &w.down_proj}) {
        SE_RETURN_IF_ERROR(ops_.prepare_matmul(*weight, act, max_tokens));
    }
    if (sums_in_f32_) {
        SE_RETURN_IF_ERROR(ops_.prepare_matmul(w.o_proj, DType::kF32, max_tokens));
        SE_RETURN_IF_ERROR(ops_.prepare_matmul(w.down_proj, DType::kF32, max_tokens));
    }
    SE_RETURN_IF_ERROR(ops_.prepare_matmul(weights_.lm_head, DType::kF32, max_logit_rows));
    if (comm_ != nullptr) {
        SE_RETURN_IF_ERROR(comm_->reserve_gather(max_logit_rows, shard_.vocab_shard));
        SE_RETURN_IF_ERROR(ensure_shard_logits(max_logit_rows));
    }
    return ensure_final_hidden(max_logit_rows);
}

Status DecoderModel::ensure_activations(int64_t n) {
    if (n <= act_.capacity) return {};
    const ModelConfig& c = config_;
    const int64_t q_dim = int64_t{c.num_heads} * c.head_dim;
    const int64_t kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
    const DType act = ops_.activation_dtype();
    struct Slot {
        TensorView* view;
        DType dtype;
        int64_t cols;
    };
    const Slot slots[] = {{&act_.x, DType::kF32, c.hidden_size},
                          {&act_.h, act, c.hidden_size},
                          {&act_.q, act, q_dim},
                          {&act_.k, act, kv_dim},
                          {&act_.v, act, kv_dim},
                          {&act_.attn, act, q_dim},
                          {&act_.proj, act, c.hidden_size},
                          {&act_.gate, act, c.intermediate_size},
                          {&act_.up, act, c.intermediate_size},
                          {&act_.proj_sum, DType::kF32, sums_in_f32_ ? c.hidden_size : 0}};
    // Each tensor starts on a 256-byte boundary (what vectorised kernels and GEMMs want).
    auto padded = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
    int64_t total = 0;
    for (const Slot& slot : slots) total += padded(n * dtype_row_bytes(slot.dtype, slot.cols));
    SE_ASSIGN_OR_RETURN(act_.buffer, ops_.allocate(static_cast<size_t>(total)));
    auto* p = act_.buffer.as<uint8_t>();
    for (const Slot& slot : slots) {
        *slot.view = TensorView{slot.dtype, p, n, slot.cols};
        p += padded(n * dtype_row_bytes(slot.dtype, slot.cols));
    }
    act_.capacity = n;
    return {};
}

Status DecoderModel::ensure_final_hidden(int64_t num_rows) {
    const auto bytes = static_cast<size_t>(
        num_rows * dtype_row_bytes(ops_.activation_dtype(), config_.hidden_size));
    if (final_hidden_.size() >= bytes) return {};
    SE_ASSIGN_OR_RETURN(final_hidden_, ops_.allocate(bytes));
    return {};
}

Status DecoderModel::ensure_shard_logits(int64_t num_rows) {
    const auto bytes = static_cast<size_t>(num_rows * config_.vocab_size) * sizeof(float);
    if (shard_logits_.size() >= bytes) return {};
    SE_ASSIGN_OR_RETURN(shard_logits_, ops_.allocate(bytes));
    return {};
}

void DecoderModel::forward(const ForwardBatch& batch, LayerAttention& attention,
                           TensorView logits) {
    const auto n = static_cast<int64_t>(batch.token_ids.size());
    SE_CHECK(static_cast<int64_t>(batch.positions.size()) == n);
    SE_CHECK(logits.rows == static_cast<int64_t>(batch.logit_rows.size()) &&
             logits.cols == shard_.full.vocab_size);
    must(ensure_activations(n));
    // Views sized to this step (the buffers may be larger).
    Activations& a = act_;
    for (TensorView* v :
         {&a.x, &a.h, &a.q, &a.k, &a.v, &a.attn, &a.proj, &a.gate, &a.up, &a.proj_sum}) {
        v->rows = n;
    }
    // The model brackets its own ops, so every caller of forward (engine, tests) gets the pair.
    StepShape shape = batch.shape;
    shape.num_tokens = static_cast<int32_t>(n);
    ops_.begin_step(shape);
    if (comm_ == nullptr) {
        ops_.embedding(batch.token_ids, weights_.embed, a.x);
    } else {
        ops_.embedding_shard(batch.token_ids, weights_.embed,
                             static_cast<int32_t>(shard_.vocab_first), a.x);
        comm_->all_reduce(a.x, ReduceOp::kSum);
    }
    ops_.rms_norm(a.x, weights_.layers[0].input_norm, config_.rms_norm_eps, a.h);
    a.h_scale = {};
    for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
        attention_block(layer, batch, attention);
        mlp_block(layer);
        attention.on_layer_end(layer);
    }
    lm_head(batch, logits);
    ops_.end_forward();
}

void DecoderModel::attention_block(int32_t layer, const ForwardBatch& batch,
                                   LayerAttention& attention) {
    const DecoderLayerWeights& w = weights_.layers[layer];
    Activations& a = act_;
    const std::optional<PlainKvStore> plain = attention.plain_store(layer);
    if (plain && !config_.attention_bias && !config_.qk_norm) {
        // Nothing between the projections and RoPE: one op from the normed input to the cache.
        const ConstTensorView qkv_w[] = {w.q_proj, w.k_proj, w.v_proj};
        const TensorView qkv[] = {a.q, a.k, a.v};
        ops_.project_rope_store(a.h, a.h_scale, qkv_w, qkv, batch.positions, rope_args(),
                                plain->write, *plain->cache);
    } else {
        attention_input(layer, batch, attention, plain);
    }
    attention.attend(layer, a.q, a.attn);
    if (w.o_bias.empty()) {
        row_parallel_add_norm(a.attn, w.o_proj, w.post_norm);
        return;
    }
    const TensorView out = row_parallel(a.attn, w.o_proj, w.o_bias);
    ops_.add_rms_norm(a.x, out, w.post_norm, config_.rms_norm_eps, a.h);
    a.h_scale = {};
}

void DecoderModel::attention_input(int32_t layer, const ForwardBatch& batch,
                                   LayerAttention& attention,
                                   const std::optional<PlainKvStore>& plain) {
    const DecoderLayerWeights& w = weights_.layers[layer];
    Activations& a = act_;
    // a.h holds this layer's normed input (the previous layer's last add fused it).
    const ConstTensorView qkv_w[] = {w.q_proj, w.k_proj, w.v_proj};
    const TensorView qkv[] = {a.q, a.k, a.v};
    ops_.project(a.h, a.h_scale, qkv_w, qkv);
    if (config_.attention_bias) {
        ops_.add_bias(a.q, w.q_bias);
        ops_.add_bias(a.k, w.k_bias);
        ops_.add_bias(a.v, w.v_bias);
    }
    const QkNorm norm = config_.qk_norm
                            ? QkNorm{.q = w.q_norm, .k = w.k_norm, .eps = config_.rms_norm_eps}
                            : QkNorm{};
    if (plain) {
        ops_.qk_norm_rope_store(a.q, a.k, a.v, batch.positions, rope_args(), norm, plain->write,
                                *plain->cache);
    } else {
        ops_.qk_norm_rope(a.q, a.k, batch.positions, rope_args(), norm);
        attention.store(layer, a.k, a.v);
    }
}

RopeArgs DecoderModel::rope_args() const {
    return {.inv_freq = inv_freq_, .style = config_.rope_style, .head_dim = config_.head_dim};
}

void DecoderModel::mlp_block(int32_t layer) {
    const DecoderLayerWeights& w = weights_.layers[layer];
    Activations& a = act_;
    const ConstTensorView gate_up_w[] = {w.gate_proj, w.up_proj};
    const TensorView gate_up[] = {a.gate, a.up};
    ops_.project_silu_mul(a.h, a.h_scale, gate_up_w, gate_up, a.gate);
    if (layer + 1 < config_.num_layers) {
        row_parallel_add_norm(a.gate, w.down_proj, weights_.layers[layer + 1].input_norm);
        return;
    }
    ops_.add(a.x, row_parallel(a.gate, w.down_proj, ConstTensorView{}));
}

TensorView DecoderModel::row_parallel(const ConstTensorView& x, const ConstTensorView& w,
                                      const ConstTensorView& bias) {
    const TensorView out = sums_in_f32_ ? act_.proj_sum : act_.proj;
    ops_.matmul(x, w, out);
    // The bias once, not once per rank's partial product.
    if (!bias.empty() && shard_.rank == 0) ops_.add_bias(out, bias);
    if (comm_ != nullptr) comm_->all_reduce(out, ReduceOp::kSum);
    return out;
}

void DecoderModel::row_parallel_add_norm(const ConstTensorView& x, const ConstTensorView& w,
                                         const ConstTensorView& norm_weight) {
    Activations& a = act_;
    if (comm_ != nullptr) {  // the norm needs the group's sum
        const TensorView out = row_parallel(x, w, ConstTensorView{});
        ops_.add_rms_norm(a.x, out, norm_weight, config_.rms_norm_eps, a.h);
        a.h_scale = {};
        return;
    }
    a.h_scale = ops_.matmul_add_rms_norm(x, w, a.proj, a.x, norm_weight, config_.rms_norm_eps, a.h);
}

void DecoderModel::lm_head(const ForwardBatch& batch, TensorView logits) {
    const auto num_rows = static_cast<int64_t>(batch.logit_rows.size());
    if (num_rows == 0) return;
    if (comm_ != nullptr) {
        // The rank's vocabulary columns, then every rank's, in order, into the caller's logits.
        must(ensure_shard_logits(num_rows));
        const TensorView part{DType::kF32, shard_logits_.data(), num_rows, config_.vocab_size};
        lm_head_rows(batch, part);
        comm_->all_gather_cols(part, shard_.vocab_shard, logits);
        return;
    }
    lm_head_rows(batch, logits);
}

void DecoderModel::lm_head_rows(const ForwardBatch& batch, TensorView logits) {
    const int64_t num_rows = logits.rows;
    must(ensure_final_hidden(num_rows));
    TensorView hidden{ops_.activation_dtype(), final_hidden_.data(), num_rows, config_.hidden_size};
    // The final norm reads only the rows whose logits are wanted (the last token of each
    // prefill chunk), which gathers them at the same time. Decode wants every row, in order.
    const bool all_rows = num_rows == act_.x.rows && batch.logit_rows.front() == 0 &&
                          batch.logit_rows.back() == num_rows - 1;
    if (all_rows) {
        ops_.rms_norm(act_.x, weights_.final_norm, config_.rms_norm_eps, hidden);
        ops_.matmul(hidden, weights_.lm_head, logits);
        return;
    }
    ops_.rms_norm_rows(act_.x, batch.logit_rows, weights_.final_norm, config_.rms_norm_eps, hidden);
    ops_.matmul(hidden, weights_.lm_head, logits);
}

}  // namespace se
