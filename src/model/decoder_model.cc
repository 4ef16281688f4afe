#include "model/decoder_model.h"

#include <algorithm>

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
    SE_ASSIGN_OR_RETURN(DecoderWeights bound, bind_decoder_weights(config, weights));
    return std::unique_ptr<DecoderModel>(new DecoderModel(config, std::move(bound), ops));
}

DecoderModel::DecoderModel(const ModelConfig& config, DecoderWeights weights, Ops& ops)
    : config_(config), weights_(std::move(weights)), ops_(ops), inv_freq_(rope_inv_freq(config)) {}

Status DecoderModel::reserve(int64_t max_tokens, int64_t max_logit_rows) {
    SE_RETURN_IF_ERROR(ensure_activations(max_tokens));
    // Every layer has the same shapes: the first one's weights stand for all.
    const DecoderLayerWeights& w = weights_.layers.front();
    const DType act = ops_.activation_dtype();
    for (const ConstTensorView* weight :
         {&w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.gate_proj, &w.up_proj, &w.down_proj}) {
        SE_RETURN_IF_ERROR(ops_.prepare_matmul(*weight, act, max_tokens));
    }
    SE_RETURN_IF_ERROR(ops_.prepare_matmul(weights_.lm_head, DType::kF32, max_logit_rows));
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
                          {&act_.up, act, c.intermediate_size}};
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

void DecoderModel::forward(const ForwardBatch& batch, LayerAttention& attention,
                           TensorView logits) {
    const auto n = static_cast<int64_t>(batch.token_ids.size());
    SE_CHECK(static_cast<int64_t>(batch.positions.size()) == n);
    SE_CHECK(logits.rows == static_cast<int64_t>(batch.logit_rows.size()) &&
             logits.cols == config_.vocab_size);
    must(ensure_activations(n));
    // Views sized to this step (the buffers may be larger).
    Activations& a = act_;
    for (TensorView* v : {&a.x, &a.h, &a.q, &a.k, &a.v, &a.attn, &a.proj, &a.gate, &a.up}) {
        v->rows = n;
    }
    // The model brackets its own ops, so every caller of forward (engine, tests) gets the pair.
    StepShape shape = batch.shape;
    shape.num_tokens = static_cast<int32_t>(n);
    ops_.begin_step(shape);
    ops_.embedding(batch.token_ids, weights_.embed, a.x);
    ops_.rms_norm(a.x, weights_.layers[0].input_norm, config_.rms_norm_eps, a.h);
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
    // a.h holds this layer's normed input (the previous layer's last add fused it).
    const ConstTensorView qkv_w[] = {w.q_proj, w.k_proj, w.v_proj};
    const TensorView qkv[] = {a.q, a.k, a.v};
    ops_.project(a.h, qkv_w, qkv);
    if (config_.attention_bias) {
        ops_.add_bias(a.q, w.q_bias);
        ops_.add_bias(a.k, w.k_bias);
        ops_.add_bias(a.v, w.v_bias);
    }
    const RopeArgs rope{
        .inv_freq = inv_freq_, .style = config_.rope_style, .head_dim = config_.head_dim};
    const QkNorm norm = config_.qk_norm
                            ? QkNorm{.q = w.q_norm, .k = w.k_norm, .eps = config_.rms_norm_eps}
                            : QkNorm{};
    ops_.qk_norm_rope(a.q, a.k, batch.positions, rope, norm);
    attention.store(layer, a.k, a.v);
    attention.attend(layer, a.q, a.attn);
    ops_.matmul(a.attn, w.o_proj, a.proj);
    if (!w.o_bias.empty()) ops_.add_bias(a.proj, w.o_bias);
    ops_.add_rms_norm(a.x, a.proj, w.post_norm, config_.rms_norm_eps, a.h);
}

void DecoderModel::mlp_block(int32_t layer) {
    const DecoderLayerWeights& w = weights_.layers[layer];
    Activations& a = act_;
    const ConstTensorView gate_up_w[] = {w.gate_proj, w.up_proj};
    const TensorView gate_up[] = {a.gate, a.up};
    ops_.project(a.h, gate_up_w, gate_up);
    ops_.silu_mul(a.gate, a.up, a.gate);
    ops_.matmul(a.gate, w.down_proj, a.proj);
    if (layer + 1 < config_.num_layers) {
        ops_.add_rms_norm(a.x, a.proj, weights_.layers[layer + 1].input_norm, config_.rms_norm_eps,
                          a.h);
    } else {
        ops_.add(a.x, a.proj);
    }
}

void DecoderModel::lm_head(const ForwardBatch& batch, TensorView logits) {
    const auto num_rows = static_cast<int64_t>(batch.logit_rows.size());
    if (num_rows == 0) return;
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
