#include "model_harness.h"

#include "engine/backend_factory.h"
#include "engine/weight_upload.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace se::testing {

ModelHarness::ModelHarness(const std::string& model_path, int32_t num_threads, int32_t block_size,
                           const std::string& device, bool enforce_eager) {
    auto loaded = load_model({.model = model_path});
    SE_CHECK(loaded.ok(), "%s", loaded.status().to_string().c_str());
    loaded_ = std::move(loaded).value();
    auto ops = create_backend({.device = device,
                               .num_threads = num_threads,
                               .max_step_tokens = 4096,
                               .max_seqs = 64,
                               .max_model_len = loaded_.config.max_position_embeddings,
                               .block_size = block_size,
                               .num_heads = loaded_.config.num_heads,
                               .head_dim = loaded_.config.head_dim,
                               .enforce_eager = enforce_eager});
    SE_CHECK(ops.ok(), "%s", ops.status().to_string().c_str());
    ops_ = std::move(ops).value();
    if (!ops_->host_memory()) {
        auto device_weights = upload_weights(loaded_.weights, *ops_, ops_->activation_dtype());
        SE_CHECK(device_weights.ok(), "%s", device_weights.status().to_string().c_str());
        loaded_.weights = std::move(device_weights).value();
    }
    auto model = DecoderModel::create(loaded_.config, loaded_.weights, *ops_);
    SE_CHECK(model.ok(), "%s", model.status().to_string().c_str());
    model_ = std::move(model).value();
    const ModelConfig& c = loaded_.config;
    const nlohmann::json knobs = nlohmann::json::object();
    auto method =
        builtin_methods().create("dense", {.model = c,
                                           .ops = *ops_,
                                           .kv_layout = {.dtype = ops_->activation_dtype(),
                                                         .block_size = block_size,
                                                         .num_kv_heads = c.num_kv_heads,
                                                         .head_dim = c.head_dim},
                                           .kv_cache_bytes = int64_t{256} << 20,
                                           .knobs = knobs});
    SE_CHECK(method.ok(), "%s", method.status().to_string().c_str());
    method_ = std::move(method).value();
    controller_ = std::make_unique<SparseController>(
        *ops_, *method_.runtime, *method_.cache,
        AttentionArgs{.num_heads = c.num_heads,
                      .num_kv_heads = c.num_kv_heads,
                      .head_dim = c.head_dim,
                      .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim))});
}

std::vector<std::vector<float>> ModelHarness::prefill_logits(
    const std::vector<std::vector<int32_t>>& prompts, int32_t chunk) {
    const int64_t vocab = loaded_.config.vocab_size;
    std::vector<std::vector<float>> out(prompts.size());
    std::vector<SeqId> ids;
    for (size_t i = 0; i < prompts.size(); ++i) {
        ids.push_back(next_seq_++);
        out[i].reserve(prompts[i].size() * vocab);
    }
    std::vector<int32_t> done(prompts.size(), 0);
    while (true) {
        StepPlan plan{.phase = StepPhase::kPrefill, .seqs = {}};
        std::vector<int32_t> tokens, positions, owner;
        for (size_t i = 0; i < prompts.size(); ++i) {
            const auto len = static_cast<int32_t>(prompts[i].size());
            const int32_t count = std::min(chunk, len - done[i]);
            if (count <= 0) continue;
            plan.seqs.push_back({.seq_id = ids[i],
                                 .num_new_tokens = count,
                                 .num_computed_tokens = done[i],
                                 .samples = done[i] + count == len});
            for (int32_t t = done[i]; t < done[i] + count; ++t) {
                tokens.push_back(prompts[i][t]);
                positions.push_back(t);
                owner.push_back(static_cast<int32_t>(i));
            }
            done[i] += count;
        }
        if (plan.seqs.empty()) break;
        std::vector<int32_t> rows(tokens.size());
        for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int32_t>(r);
        std::vector<float> logits(rows.size() * vocab, std::numeric_limits<float>::quiet_NaN());
        const size_t bytes = logits.size() * sizeof(float);
        auto device_logits = ops_->allocate(bytes);
        SE_CHECK(device_logits.ok(), "%s", device_logits.status().to_string().c_str());
        SE_CHECK(controller_->begin_step(plan).ok());
        model_->forward({.token_ids = tokens, .positions = positions, .logit_rows = rows},
                        *controller_,
                        TensorView{DType::kF32, device_logits->data(),
                                   static_cast<int64_t>(rows.size()), vocab});
        controller_->end_step();
        SE_CHECK(ops_->copy_to_host(logits.data(), device_logits->data(), bytes).ok());
        for (size_t r = 0; r < rows.size(); ++r) {
            out[owner[r]].insert(out[owner[r]].end(), logits.begin() + r * vocab,
                                 logits.begin() + (r + 1) * vocab);
        }
    }
    for (SeqId id : ids) method_.cache->release(id);
    return out;
}

std::vector<std::vector<float>> ModelHarness::greedy_logits(
    const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& num_tokens) {
    SE_CHECK(num_tokens.size() == prompts.size());
    const int64_t vocab = loaded_.config.vocab_size;
    const auto num_prompts = static_cast<int64_t>(prompts.size());
    std::vector<std::vector<float>> out(prompts.size());
    std::vector<std::vector<int32_t>> seqs = prompts;
    std::vector<SeqId> ids;
    for (size_t i = 0; i < prompts.size(); ++i) ids.push_back(next_seq_++);
    // One buffer for every step, allocated before the first: an allocation drops the graphs.
    auto device_logits = ops_->allocate(static_cast<size_t>(num_prompts * vocab) * sizeof(float));
    SE_CHECK(device_logits.ok(), "%s", device_logits.status().to_string().c_str());
    std::vector<float> logits(static_cast<size_t>(num_prompts * vocab));
    for (bool prefill = true;; prefill = false) {
        StepPlan plan{.phase = prefill ? StepPhase::kPrefill : StepPhase::kDecode, .seqs = {}};
        std::vector<int32_t> tokens, positions, rows, owner;
        StepShape shape{.decode = !prefill};
        for (size_t i = 0; i < prompts.size(); ++i) {
            const auto len = static_cast<int32_t>(seqs[i].size());
            if (static_cast<int32_t>(out[i].size() / vocab) == num_tokens[i]) continue;
            const int32_t first = prefill ? 0 : len - 1;
            plan.seqs.push_back({.seq_id = ids[i],
                                 .num_new_tokens = len - first,
                                 .num_computed_tokens = first,
                                 .samples = true});
            for (int32_t t = first; t < len; ++t) {
                tokens.push_back(seqs[i][t]);
                positions.push_back(t);
            }
            rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
            owner.push_back(static_cast<int32_t>(i));
            shape.max_kv_len = std::max(shape.max_kv_len, len);
        }
        if (plan.seqs.empty()) break;
        shape.num_tokens = static_cast<int32_t>(tokens.size());
        shape.num_seqs = static_cast<int32_t>(plan.seqs.size());
        const auto num_rows = static_cast<int64_t>(rows.size());
        SE_CHECK(controller_->begin_step(plan).ok());
        model_->forward(
            {.token_ids = tokens, .positions = positions, .logit_rows = rows, .shape = shape},
            *controller_, TensorView{DType::kF32, device_logits->data(), num_rows, vocab});
        controller_->end_step();
        const size_t bytes = static_cast<size_t>(num_rows * vocab) * sizeof(float);
        SE_CHECK(ops_->copy_to_host(logits.data(), device_logits->data(), bytes).ok());
        for (int64_t r = 0; r < num_rows; ++r) {
            const float* row = logits.data() + r * vocab;
            std::vector<float>& seq_out = out[owner[r]];
            seq_out.insert(seq_out.end(), row, row + vocab);
            seqs[owner[r]].push_back(
                static_cast<int32_t>(std::max_element(row, row + vocab) - row));
        }
    }
    for (SeqId id : ids) method_.cache->release(id);
    return out;
}

double max_abs_diff(const float* a, const float* b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
        if (std::isnan(d)) return std::numeric_limits<double>::infinity();
        worst = std::max(worst, d);
    }
    return worst;
}

}  // namespace se::testing
