#include "support/methods/contract_driver.h"

#include <cmath>
#include <optional>
#include <random>

namespace se::testing {
namespace {

// Forwards every hook to the method's runtime and keeps what it decided.
class RecordingRuntime final : public MethodRuntime {
  public:
    RecordingRuntime(MethodRuntime& inner, std::vector<StepDecisions>& out)
        : inner_(inner), out_(out) {}

    bool reads_activations_on_host() const override { return inner_.reads_activations_on_host(); }
    void prepare_step(const StepPlan& plan) override {
        out_.emplace_back();
        inner_.prepare_step(plan);
    }
    bool needs_attention_stats(int32_t layer, StepPhase phase) const override {
        return inner_.needs_attention_stats(layer, phase);
    }
    Selection select_prefill(int32_t layer, const ConstTensorView& q) override {
        return out_.back().selections.emplace_back(inner_.select_prefill(layer, q));
    }
    Selection select_decode(int32_t layer, const ConstTensorView& q) override {
        return out_.back().selections.emplace_back(inner_.select_decode(layer, q));
    }
    void on_attention_end(int32_t layer, const AttentionStats& stats) override {
        inner_.on_attention_end(layer, stats);
    }
    void on_layer_end(int32_t layer) override { inner_.on_layer_end(layer); }
    EvictionPlan finish_step() override { return out_.back().eviction = inner_.finish_step(); }

  private:
    MethodRuntime& inner_;
    std::vector<StepDecisions>& out_;
};

}  // namespace

Expected<std::unique_ptr<ContractDriver>> ContractDriver::create(const std::string& method,
                                                                 const nlohmann::json& knobs,
                                                                 DriverOptions options) {
    std::unique_ptr<ContractDriver> d(new ContractDriver());
    d->options_ = options;
    d->knobs_ = knobs;
    ModelConfig& c = d->config_;
    c.architecture = "LlamaForCausalLM";
    c.num_layers = options.num_layers;
    c.num_heads = options.num_heads;
    c.num_kv_heads = options.num_kv_heads;
    c.head_dim = options.head_dim;
    c.hidden_size = options.num_heads * options.head_dim;
    c.intermediate_size = 2 * c.hidden_size;
    c.vocab_size = 32;
    c.max_position_embeddings = 1 << 16;
    d->args_ = {.num_heads = c.num_heads,
                .num_kv_heads = c.num_kv_heads,
                .head_dim = c.head_dim,
                .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    d->ops_ = std::make_unique<CpuOps>(CpuOptions{.num_threads = 1});
    const bool caching = options.enable_prefix_caching;
    SE_ASSIGN_OR_RETURN(d->method_, builtin_methods().create(
                                        method, {.model = c,
                                                 .ops = *d->ops_,
                                                 .kv_layout = {.dtype = DType::kF32,
                                                               .block_size = options.block_size,
                                                               .num_kv_heads = c.num_kv_heads,
                                                               .head_dim = c.head_dim},
                                                 .kv_cache_bytes = options.kv_cache_bytes,
                                                 .knobs = d->knobs_,
                                                 .enable_prefix_caching = caching,
                                                 .max_step_tokens = options.max_step_tokens,
                                                 .comm = options.comm}));
    SE_RETURN_IF_ERROR(check_payloads(*d->ops_, *d->method_.cache));
    MethodRuntime* runtime = d->method_.runtime.get();
    if (options.record_decisions) {
        d->recorder_ = std::make_unique<RecordingRuntime>(*runtime, d->decisions_);
        runtime = d->recorder_.get();
    }
    d->controller_ =
        std::make_unique<SparseController>(*d->ops_, *runtime, *d->method_.cache, d->args_);
    return d;
}

std::vector<std::vector<float>> ContractDriver::step(const StepPlan& plan,
                                                     const std::vector<LayerInputs>& layers) {
    SE_CHECK(static_cast<int32_t>(layers.size()) == config_.num_layers);
    const int64_t n = plan.num_tokens();
    const int64_t qw = int64_t{args_.num_heads} * args_.head_dim;
    const int64_t kw = int64_t{args_.num_kv_heads} * args_.head_dim;
    const Status s = controller_->begin_step(plan);
    SE_CHECK(s.ok(), "%s", s.to_string().c_str());
    std::vector<std::vector<float>> outs(layers.size());
    for (int32_t l = 0; l < config_.num_layers; ++l) {
        const LayerInputs& in = layers[l];
        SE_CHECK(static_cast<int64_t>(in.q.size()) == n * qw &&
                 static_cast<int64_t>(in.k.size()) == n * kw &&
                 static_cast<int64_t>(in.v.size()) == n * kw);
        const ConstTensorView k(DType::kF32, in.k.data(), n, kw);
        const ConstTensorView v(DType::kF32, in.v.data(), n, kw);
        const std::optional<PlainKvStore> plain =
            options_.plain_stores ? controller_->plain_store(l) : std::nullopt;
        if (plain) {
            ops_->store_kv(k, v, plain->write, *plain->cache);
        } else {
            controller_->store(l, k, v);
        }
        outs[l].assign(static_cast<size_t>(n * qw), NAN);
        controller_->attend(l, ConstTensorView(DType::kF32, in.q.data(), n, qw),
                            TensorView{DType::kF32, outs[l].data(), n, qw});
        controller_->on_layer_end(l);
    }
    controller_->end_step();
    return outs;
}

std::vector<LayerInputs> ContractDriver::random_inputs(int32_t num_tokens, uint64_t seed,
                                                       float scale) const {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    const int64_t qw = int64_t{args_.num_heads} * args_.head_dim;
    const int64_t kw = int64_t{args_.num_kv_heads} * args_.head_dim;
    std::vector<LayerInputs> layers(static_cast<size_t>(config_.num_layers));
    for (LayerInputs& in : layers) {
        in.q.resize(static_cast<size_t>(num_tokens * qw));
        in.k.resize(static_cast<size_t>(num_tokens * kw));
        in.v.resize(static_cast<size_t>(num_tokens * kw));
        for (float& x : in.q) x = normal(rng);
        for (float& x : in.k) x = normal(rng);
        for (float& x : in.v) x = normal(rng);
    }
    return layers;
}

std::unique_ptr<ContractDriver> make_driver(const std::string& method, const nlohmann::json& knobs,
                                            DriverOptions options) {
    auto d = ContractDriver::create(method, knobs, options);
    SE_CHECK(d.ok(), "%s", d.status().to_string().c_str());
    return std::move(d).value();
}

}  // namespace se::testing
