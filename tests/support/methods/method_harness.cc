#include "support/methods/method_harness.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>

namespace se::testing {

Expected<std::unique_ptr<MethodHarness>> MethodHarness::create(const std::string& method,
                                                               const nlohmann::json& knobs,
                                                               HarnessOptions options) {
    std::unique_ptr<MethodHarness> h(new MethodHarness());
    h->options_ = options;
    h->knobs_ = knobs;
    write_dummy_llama(h->dir_, options);
    SE_ASSIGN_OR_RETURN(h->loaded_, load_model({.model = h->dir_.path().string(),
                                                .load_format = "dummy",
                                                .dtype = "float32",
                                                .seed = options.seed}));
    h->ops_ = std::make_unique<CpuOps>(CpuOptions{.num_threads = options.num_threads});
    SE_ASSIGN_OR_RETURN(h->model_,
                        DecoderModel::create(h->loaded_.config, h->loaded_.weights, *h->ops_));
    const ModelConfig& c = h->loaded_.config;
    SE_ASSIGN_OR_RETURN(h->method_, builtin_methods().create(
                                        method, {.model = c,
                                                 .ops = *h->ops_,
                                                 .kv_layout = {.dtype = DType::kF32,
                                                               .block_size = options.block_size,
                                                               .num_kv_heads = c.num_kv_heads,
                                                               .head_dim = c.head_dim},
                                                 .kv_cache_bytes = options.kv_cache_bytes,
                                                 .knobs = h->knobs_,
                                                 .enable_prefix_caching = false,
                                                 .max_step_tokens = options.max_step_tokens}));
    SE_RETURN_IF_ERROR(check_payloads(*h->ops_, *h->method_.cache));
    h->controller_ = std::make_unique<SparseController>(
        *h->ops_, *h->method_.runtime, *h->method_.cache,
        AttentionArgs{.num_heads = c.num_heads,
                      .num_kv_heads = c.num_kv_heads,
                      .head_dim = c.head_dim,
                      .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim))});
    return h;
}

std::vector<float> MethodHarness::step(const StepPlan& plan, const std::vector<int32_t>& tokens,
                                       const std::vector<int32_t>& positions,
                                       const std::vector<int32_t>& logit_rows) {
    const int64_t vocab = loaded_.config.vocab_size;
    std::vector<float> logits(logit_rows.size() * vocab, std::numeric_limits<float>::quiet_NaN());
    const Status s = controller_->begin_step(plan);
    SE_CHECK(s.ok(), "%s", s.to_string().c_str());
    model_->forward(
        {.token_ids = tokens, .positions = positions, .logit_rows = logit_rows}, *controller_,
        TensorView{DType::kF32, logits.data(), static_cast<int64_t>(logit_rows.size()), vocab});
    controller_->end_step();
    return logits;
}

HarnessRun MethodHarness::run(const std::vector<std::vector<int32_t>>& prompts, int32_t chunk,
                              int32_t decode_steps,
                              const std::function<void(const StepPlan&)>& after_step, bool keep) {
    const int64_t vocab = loaded_.config.vocab_size;
    const size_t n = prompts.size();
    HarnessRun out;
    out.logits.assign(n, {});
    out.tokens.assign(n, {});
    ids_.clear();
    for (size_t i = 0; i < n; ++i) ids_.push_back(next_seq_++);
    auto take = [&](size_t i, const float* row) {
        out.logits[i].emplace_back(row, row + vocab);
        out.tokens[i].push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
    };
    std::vector<int32_t> done(n, 0);
    while (true) {  // prefill
        StepPlan plan{.phase = StepPhase::kPrefill, .seqs = {}};
        std::vector<int32_t> tokens, positions, rows;
        std::vector<size_t> owners;
        for (size_t i = 0; i < n; ++i) {
            const auto len = static_cast<int32_t>(prompts[i].size());
            const int32_t count = std::min(chunk, len - done[i]);
            if (count <= 0) continue;
            const bool last = done[i] + count == len;
            plan.seqs.push_back({.seq_id = ids_[i],
                                 .num_new_tokens = count,
                                 .num_computed_tokens = done[i],
                                 .samples = last});
            for (int32_t t = done[i]; t < done[i] + count; ++t) {
                tokens.push_back(prompts[i][t]);
                positions.push_back(t);
            }
            if (last) {
                rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
                owners.push_back(i);
            }
            done[i] += count;
        }
        if (plan.seqs.empty()) break;
        const std::vector<float> logits = step(plan, tokens, positions, rows);
        for (size_t r = 0; r < owners.size(); ++r) take(owners[r], logits.data() + r * vocab);
        if (after_step) after_step(plan);
    }
    for (int32_t s = 0; s < decode_steps; ++s) {
        StepPlan plan{.phase = StepPhase::kDecode, .seqs = {}};
        std::vector<int32_t> tokens, positions, rows;
        for (size_t i = 0; i < n; ++i) {
            const auto len = static_cast<int32_t>(prompts[i].size()) + s;
            plan.seqs.push_back({.seq_id = ids_[i],
                                 .num_new_tokens = 1,
                                 .num_computed_tokens = len,
                                 .samples = true});
            tokens.push_back(out.tokens[i].back());
            positions.push_back(len);
            rows.push_back(static_cast<int32_t>(i));
        }
        const std::vector<float> logits = step(plan, tokens, positions, rows);
        for (size_t i = 0; i < n; ++i) take(i, logits.data() + i * vocab);
        if (after_step) after_step(plan);
    }
    if (!keep) {
        for (SeqId id : ids_) method_.cache->release(id);
    }
    return out;
}

std::vector<int32_t> MethodHarness::extend(SeqId seq, const std::vector<int32_t>& tokens,
                                           int32_t from, int32_t chunk, int32_t decode_steps) {
    const auto len = static_cast<int32_t>(tokens.size());
    std::vector<int32_t> sampled;
    auto greedy = [&](const std::vector<float>& logits) {
        sampled.push_back(
            static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    };
    for (int32_t done = from; done < len;) {
        const int32_t count = std::min(chunk, len - done);
        const bool last = done + count == len;
        const StepPlan plan{.phase = StepPhase::kPrefill,
                            .seqs = {{.seq_id = seq,
                                      .num_new_tokens = count,
                                      .num_computed_tokens = done,
                                      .samples = last}}};
        std::vector<int32_t> positions(static_cast<size_t>(count));
        std::iota(positions.begin(), positions.end(), done);
        const std::vector<float> logits =
            step(plan, std::vector<int32_t>(tokens.begin() + done, tokens.begin() + done + count),
                 positions, last ? std::vector<int32_t>{count - 1} : std::vector<int32_t>{});
        if (last) greedy(logits);
        done += count;
    }
    for (int32_t s = 0; s < decode_steps; ++s) {
        const int32_t position = len + s;
        const StepPlan plan{.phase = StepPhase::kDecode,
                            .seqs = {{.seq_id = seq,
                                      .num_new_tokens = 1,
                                      .num_computed_tokens = position,
                                      .samples = true}}};
        greedy(step(plan, {sampled.back()}, {position}, {0}));
    }
    return sampled;
}

nlohmann::json dummy_llama_config(const HarnessOptions& options) {
    return {{"architectures", {"LlamaForCausalLM"}},
            {"hidden_size", options.num_heads * options.head_dim},
            {"intermediate_size", 2 * options.num_heads * options.head_dim},
            {"num_hidden_layers", options.num_layers},
            {"num_attention_heads", options.num_heads},
            {"num_key_value_heads", options.num_kv_heads},
            {"head_dim", options.head_dim},
            {"vocab_size", options.vocab},
            {"max_position_embeddings", 4096},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 10000.0},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", false},
            {"torch_dtype", "float32"}};
}

void write_dummy_llama(const TempDir& dir, const HarnessOptions& options) {
    std::ofstream(dir.file("config.json")) << dummy_llama_config(options).dump(2);
}

std::vector<int32_t> random_tokens(uint64_t seed, int32_t len, int32_t vocab) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> t(static_cast<size_t>(len));
    for (int32_t& x : t) x = 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab - 1));
    return t;
}

}  // namespace se::testing
