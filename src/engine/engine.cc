#include "engine/engine.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

namespace se {
namespace {

using Clock = std::chrono::steady_clock;

Expected<DType> kv_dtype_of(const std::string& name) {
    if (name == "auto") return DType::kF32;  // the CPU backend's activation dtype
    std::optional<DType> dtype = parse_dtype(name);
    if (!dtype) {
        return invalid_argument(fmt::format(
            "--kv-cache-dtype '{}' is not one of auto, float32, bfloat16, float16", name));
    }
    return *dtype;
}

void add_unique(std::vector<int32_t>& ids, int32_t id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

Expected<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
    std::unique_ptr<Engine> engine(new Engine(config));
    SE_RETURN_IF_ERROR(engine->init());
    return engine;
}

Engine::~Engine() = default;

Status Engine::init() {
    SE_ASSIGN_OR_RETURN(loaded_, load_model(config_.load));
    const ModelConfig& mc = loaded_.config;
    if (loaded_.gguf_vocab) {
        SE_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(*loaded_.gguf_vocab));
        tokenizer_ = std::make_unique<Tokenizer>(std::move(tok));
    } else if (!loaded_.tokenizer_json.empty()) {
        auto tok = Tokenizer::from_json(loaded_.tokenizer_json,
                                        {.bos_token = loaded_.bos_token.value_or(""),
                                         .eos_token = loaded_.eos_token.value_or("")});
        if (!tok.ok()) return tok.status().with_context(loaded_.source_path + "/tokenizer.json");
        tokenizer_ = std::make_unique<Tokenizer>(std::move(tok).value());
    }
    if (!loaded_.chat_template.empty()) {
        auto tmpl = ChatTemplate::parse(loaded_.chat_template);
        if (!tmpl.ok()) return tmpl.status().with_context("chat template");
        chat_template_ = std::make_unique<ChatTemplate>(std::move(tmpl).value());
    }
    for (int32_t id : mc.eos_token_ids) add_unique(eos_token_ids_, id);
    for (int32_t id : loaded_.generation.eos_token_ids) add_unique(eos_token_ids_, id);
    if (tokenizer_ && tokenizer_->eos_id()) add_unique(eos_token_ids_, *tokenizer_->eos_id());

    max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len : mc.max_position_embeddings;
    if (max_model_len_ > mc.max_position_embeddings) {
        return invalid_argument(
            fmt::format("--max-model-len {} exceeds the model's max_position_embeddings {}",
                        config_.max_model_len, mc.max_position_embeddings));
    }
    if (config_.block_size <= 0 || config_.block_size > 1024) {
        return invalid_argument(
            fmt::format("--block-size must be in [1, 1024], got {}", config_.block_size));
    }
    SE_ASSIGN_OR_RETURN(DType kv_dtype, kv_dtype_of(config_.kv_cache_dtype));

    ops_ = std::make_unique<CpuOps>(CpuOptions{.num_threads = config_.num_threads});
    SE_ASSIGN_OR_RETURN(model_, DecoderModel::create(mc, loaded_.weights, *ops_));
    const MethodContext context{.model = mc,
                                .ops = *ops_,
                                .kv_layout = {.dtype = kv_dtype,
                                              .block_size = config_.block_size,
                                              .num_kv_heads = mc.num_kv_heads,
                                              .head_dim = mc.head_dim},
                                .kv_cache_bytes = config_.kv_cache_memory_bytes,
                                .knobs = config_.sparse_config};
    SE_ASSIGN_OR_RETURN(method_, builtin_methods().create(config_.sparse_method, context));
    const AttentionArgs args{.num_heads = mc.num_heads,
                             .num_kv_heads = mc.num_kv_heads,
                             .head_dim = mc.head_dim,
                             .scale = 1.0f / std::sqrt(static_cast<float>(mc.head_dim))};
    controller_ = std::make_unique<SparseController>(*ops_, *method_.runtime, *method_.cache, args);
    runner_ = std::make_unique<ModelRunner>(*model_, *controller_);
    return {};
}

int64_t Engine::kv_capacity_tokens() const {
    const CacheCapacity cap = method_.cache->capacity();
    return cap.num_blocks * cap.block_size;
}

Expected<RequestId> Engine::add_request(std::vector<int32_t> prompt, SamplingParams params,
                                        StreamCallback on_delta) {
    const int32_t vocab = loaded_.config.vocab_size;
    SE_RETURN_IF_ERROR(params.validate(vocab));
    if (prompt.empty()) return invalid_argument("prompt is empty");
    for (int32_t id : prompt) {
        if (id < 0 || id >= vocab) {
            return invalid_argument(
                fmt::format("prompt token id {} is outside the vocabulary [0, {})", id, vocab));
        }
    }
    const auto prompt_len = static_cast<int32_t>(prompt.size());
    if (prompt_len >= max_model_len_) {
        return out_of_range(
            fmt::format("prompt has {} tokens; --max-model-len {} leaves no room to generate",
                        prompt_len, max_model_len_));
    }
    const int32_t room = max_model_len_ - prompt_len;
    if (!params.max_tokens) {
        params.max_tokens = room;
    } else if (*params.max_tokens > room) {
        return out_of_range(
            fmt::format("prompt ({} tokens) + max_tokens ({}) exceeds --max-model-len {}",
                        prompt_len, *params.max_tokens, max_model_len_));
    }
    const RequestId id = next_id_++;
    auto seq = std::make_unique<Sequence>(
        SequenceOptions{.id = id,
                        .prompt = std::move(prompt),
                        .params = std::move(params),
                        .sampler = {.eos_token_ids = eos_token_ids_,
                                    .seed_if_unset = config_.seed * 0x9E3779B97F4A7C15ull +
                                                     static_cast<uint64_t>(id)},
                        .eos_token_ids = eos_token_ids_,
                        .on_delta = std::move(on_delta)},
        tokenizer_.get());
    scheduler_.add(seq.get());
    seqs_.emplace(id, std::move(seq));
    return id;
}

Expected<RequestId> Engine::add_request(std::string_view prompt, SamplingParams params,
                                        StreamCallback on_delta) {
    if (!tokenizer_) return failed_precondition("the model has no tokenizer; send token ids");
    SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                        tokenizer_->encode(prompt, {.add_special_tokens = true}));
    return add_request(std::move(ids), std::move(params), std::move(on_delta));
}

Expected<std::string> Engine::render_chat(ChatTemplateInputs inputs) const {
    if (!chat_template_) return failed_precondition("the model has no chat template");
    if (!inputs.messages.is_array()) return invalid_argument("messages must be an array");
    if (tokenizer_) {
        auto name = [&](std::optional<int32_t> id) -> std::optional<std::string> {
            if (!id) return std::nullopt;
            auto text = tokenizer_->token_text(*id);
            return text.ok() ? std::optional<std::string>(text.value()) : std::nullopt;
        };
        std::optional<std::string> bos =
            loaded_.bos_token ? loaded_.bos_token : name(tokenizer_->bos_id());
        std::optional<std::string> eos =
            loaded_.eos_token ? loaded_.eos_token : name(tokenizer_->eos_id());
        if (bos && !inputs.special_tokens.contains("bos_token"))
            inputs.special_tokens["bos_token"] = *bos;
        if (eos && !inputs.special_tokens.contains("eos_token"))
            inputs.special_tokens["eos_token"] = *eos;
    }
    return chat_template_->render(make_chat_context(inputs));
}

Expected<std::vector<int32_t>> Engine::chat_prompt_ids(
    const nlohmann::ordered_json& messages) const {
    if (!tokenizer_) return failed_precondition("the model has no tokenizer");
    SE_ASSIGN_OR_RETURN(std::string text,
                        render_chat({.messages = messages, .add_generation_prompt = true}));
    return tokenizer_->encode(text, {.add_special_tokens = false});
}

void Engine::abort(RequestId id) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) return;
    it->second->abort(cancelled(fmt::format("request {} was cancelled", id)));
    finish(*it->second);
}

void Engine::step() {
    std::optional<ScheduledStep> step = scheduler_.schedule();
    if (!step) return;
    const auto start = Clock::now();
    Expected<StepLogits> result = runner_->execute(*step);
    if (!result.ok()) {
        handle_out_of_memory(*step, result.status());
        return;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const bool prefill = step->plan.phase == StepPhase::kPrefill;
    ++stats_.num_steps;
    (prefill ? stats_.prefill_seconds : stats_.decode_seconds) += seconds;
    (prefill ? stats_.prefill_tokens : stats_.decode_tokens) += step->plan.num_tokens();
    for (size_t i = 0; i < step->seqs.size(); ++i) {
        step->seqs[i]->advance(step->plan.seqs[i].num_new_tokens);
        step->seqs[i]->add_step_time(seconds, prefill);
    }
    StepLogits& out = result.value();
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        float* row = out.logits.f32_row(static_cast<int64_t>(i));
        if (out.seqs[i]->sample_and_append({row, static_cast<size_t>(out.logits.cols)})) {
            finish(*out.seqs[i]);
        }
    }
}

void Engine::handle_out_of_memory(const ScheduledStep& step, const Status& error) {
    // Until preemption exists the newest sequence of the step gives way, with the reason.
    Sequence* victim = step.seqs.back();
    victim->abort(error.with_context(
        "request could not continue: KV cache exhausted (raise --kv-cache-memory)"));
    finish(*victim);
}

void Engine::finish(Sequence& seq) {
    method_.cache->release(seq.seq_id());
    scheduler_.remove(&seq);
    finished_.push_back(seq.output());
    seqs_.erase(seq.id());
}

std::vector<RequestOutput> Engine::take_finished() {
    return std::exchange(finished_, {});
}

Expected<std::vector<RequestOutput>> Engine::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params) {
    std::vector<RequestId> ids;
    for (const auto& prompt : prompts) {
        SE_ASSIGN_OR_RETURN(RequestId id, add_request(prompt, params));
        ids.push_back(id);
    }
    std::map<RequestId, RequestOutput> done;
    while (done.size() < ids.size()) {
        SE_CHECK(has_work(), "requests outstanding but nothing to schedule");
        step();
        for (RequestOutput& out : take_finished()) done.emplace(out.id, std::move(out));
    }
    std::vector<RequestOutput> outputs;
    for (RequestId id : ids) outputs.push_back(std::move(done.at(id)));
    return outputs;
}

}  // namespace se
