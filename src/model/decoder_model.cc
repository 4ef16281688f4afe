#include "model/decoder_model.h"

#include <algorithm>

namespace se {

Expected<std::unique_ptr<DecoderModel>> DecoderModel::create(const ModelConfig& config,
                                                             const WeightStore& weights, Ops& ops) {
    SE_RETURN_IF_ERROR(config.validate());
    SE_ASSIGN_OR_RETURN(DecoderWeights bound, bind_decoder_weights(config, weights));
    return std::unique_ptr<DecoderModel>(new DecoderModel(config, std::move(bound), ops));
}

DecoderModel::DecoderModel(const ModelConfig& config, DecoderWeights weights, Ops& ops)
    : config_(config), weights_(std::move(weights)), ops_(ops), inv_freq_(rope_inv_freq(config)) {}

void DecoderModel::ensure_activations(int64_t n) {
    if (n <= act_.capacity) return;
    const ModelConfig& c = config_;
    const int64_t q_dim = int64_t{c.num_heads} * c.head_dim;
    const int64_t kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
    const int64_t widths[] = {
        c.hidden_size,       c.hidden_size,      q_dim, kv_dim, kv_dim, q_dim, c.hidden_size,
        c.intermediate_size, c.intermediate_size};
    int64_t total = 0;
    for (int64_t w : widths) total += n * w;
    act_.buffer = HostBuffer(static_cast<size_t>(total) * sizeof(float));
    float* p = act_.buffer.as<float>();
    TensorView* views[] = {&act_.x,    &act_.h,    &act_.q,    &act_.k, &act_.v,
                           &act_.attn, &act_.proj, &act_.gate, &act_.up};
    for (size_t i = 0; i < std::size(views); ++i) {
        *views[i] = TensorView{DType::kF32, p, n, widths[i]};
        p += n * widths[i];
    }
    act_.capacity = n;
}

void DecoderModel::forward(const ForwardBatch& batch, LayerAttention& attention,
                           TensorView logits) {
    const auto n = static_cast<int64_t>(batch.token_ids.size());
    SE_CHECK(static_cast<int64_t>(batch.positions.size()) == n);
    SE_CHECK(logits.rows == static_cast<int64_t>(batch.logit_rows.size()) &&
             logits.cols == config_.vocab_size);
    ensure_activations(n);
    // Views sized to this step (the buffers may be larger).
    Activations& a = act_;
    for (TensorView* v : {&a.x, &a.h, &a.q, &a.k, &a.v, &a.attn, &a.proj, &a.gate, &a.up}) {
        v->rows = n;
    }
    ops_.embedding(batch.token_ids, weights_.embed, a.x);
    for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
        attention_block(layer, batch, attention);
        mlp_block(layer);
        attention.on_layer_end(layer);
    }
    lm_head(batch, logits);
}

void DecoderModel::attention_block(int32_t layer, const ForwardBatch& batch,
                                   LayerAttention& attention) {
    const DecoderLayerWeights& w = weights_.layers[layer];
    Activations& a = act_;
    ops_.rms_norm(a.x, w.input_norm, config_.rms_norm_eps, a.h);
    ops_.matmul(a.h, w.q_proj, a.q);
    ops_.matmul(a.h, w.k_proj, a.k);
    ops_.matmul(a.h, w.v_proj, a.v);
    if (config_.attention_bias) {
        ops_.add_bias(a.q, w.q_bias);
        ops_.add_bias(a.k, w.k_bias);
        ops_.add_bias(a.v, w.v_bias);
    }
    if (config_.qk_norm) {
        ops_.head_rms_norm(a.q, config_.head_dim, w.q_norm, config_.rms_norm_eps);
        ops_.head_rms_norm(a.k, config_.head_dim, w.k_norm, config_.rms_norm_eps);
    }
    const RopeArgs rope{
        .inv_freq = inv_freq_, .style = config_.rope_style, .head_dim = config_.head_dim};
    ops_.rope(a.q, batch.positions, rope);
    ops_.rope(a.k, batch.positions, rope);
    attention.store(layer, a.k, a.v);
    attention.attend(layer, a.q, a.attn);
    ops_.matmul(a.attn, w.o_proj, a.proj);
    if (!w.o_bias.empty()) ops_.add_bias(a.proj, w.o_bias);
    ops_.add(a.x, a.proj);
}

void DecoderModel::mlp_block(int32_t layer) {
    const DecoderLayerWeights& w = weights_.layers[layer];
    Activations& a = act_;
    ops_.rms_norm(a.x, w.post_norm, config_.rms_norm_eps, a.h);
    ops_.matmul(a.h, w.gate_proj, a.gate);
    ops_.matmul(a.h, w.up_proj, a.up);
    ops_.silu_mul(a.gate, a.up, a.gate);
    ops_.matmul(a.gate, w.down_proj, a.proj);
    ops_.add(a.x, a.proj);
}

void DecoderModel::lm_head(const ForwardBatch& batch, TensorView logits) {
    const auto num_rows = static_cast<int64_t>(batch.logit_rows.size());
    if (num_rows == 0) return;
    const size_t bytes = static_cast<size_t>(num_rows * config_.hidden_size) * sizeof(float);
    if (final_hidden_.size() < bytes) final_hidden_ = HostBuffer(bytes);
    TensorView hidden{DType::kF32, final_hidden_.data(), num_rows, config_.hidden_size};
    // The final norm reads only the rows whose logits are wanted (the last token of each
    // prefill chunk), which gathers them at the same time. Decode wants every row, in order.
    const bool all_rows = num_rows == act_.x.rows && batch.logit_rows.front() == 0 &&
                          batch.logit_rows.back() == num_rows - 1;
    if (all_rows) {
        ops_.rms_norm(act_.x, weights_.final_norm, config_.rms_norm_eps, hidden);
        ops_.matmul(hidden, weights_.lm_head, logits);
        return;
    }
    for (int64_t i = 0; i < num_rows; ++i) {
        const int32_t row = batch.logit_rows[i];
        ops_.rms_norm(act_.x.slice_rows(row, 1), weights_.final_norm, config_.rms_norm_eps,
                      hidden.slice_rows(i, 1));
    }
    ops_.matmul(hidden, weights_.lm_head, logits);
}

}  // namespace se
