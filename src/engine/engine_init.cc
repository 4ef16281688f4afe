// Engine construction: model, tokenizer, chat template, backend, method, scheduler.
#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "engine/backend_factory.h"
#include "engine/engine.h"
#include "engine/weight_upload.h"

namespace se {
namespace {

Expected<DType> kv_dtype_of(const std::string& name, const Ops& ops) {
    if (name == "auto") return ops.activation_dtype();
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
    SE_RETURN_IF_ERROR(init_tokenizer());
    for (int32_t id : mc.eos_token_ids) add_unique(eos_token_ids_, id);
    for (int32_t id : loaded_.generation.eos_token_ids) add_unique(eos_token_ids_, id);
    if (tokenizer_ && tokenizer_->eos_id()) add_unique(eos_token_ids_, *tokenizer_->eos_id());

    max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len : mc.max_position_embeddings;
    if (max_model_len_ > mc.max_position_embeddings) {
        return invalid_argument(
            fmt::format("--max-model-len {} exceeds the model's max_position_embeddings {}",
                        config_.max_model_len, mc.max_position_embeddings));
    }
    const SchedulerConfig& sc = config_.scheduler;
    if (sc.max_num_seqs < 1 || sc.max_num_batched_tokens < 1 || sc.prefill_chunk_size < 1) {
        return invalid_argument(
            "--max-num-seqs, --max-num-batched-tokens and --prefill-chunk-size must be >= 1");
    }
    SE_RETURN_IF_ERROR(init_backend());
    // Every buffer a step writes exists before the KV arena takes what memory is left.
    SE_RETURN_IF_ERROR(init_models());
    SE_RETURN_IF_ERROR(init_method());
    SE_RETURN_IF_ERROR(runner_->reserve(sc.max_num_seqs));
    SE_RETURN_IF_ERROR(init_chains());
    scheduler_ = std::make_unique<Scheduler>(
        sc, *oracle_, [this](const Sequence& seq) { return prefix_query(seq); });
    return {};
}

Status Engine::init_tokenizer() {
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
    return {};
}

Status Engine::init_backend() {
    // Checked on every device, so a bad value is an error even where it would go unused.
    const float util = config_.gpu_memory_utilization;
    if (!(util > 0.0f && util <= 1.0f)) {
        return invalid_argument(
            fmt::format("--gpu-memory-utilization must be in (0, 1], got {}", util));
    }
    const int32_t tp = config_.tensor_parallel_size;
    if (tp < 1) {
        return invalid_argument(fmt::format("--tensor-parallel-size must be >= 1, got {}", tp));
    }
    for (int32_t r = 0; r < tp; ++r) {
        SE_ASSIGN_OR_RETURN(ModelShard shard, shard_model(loaded_.config, r, tp));
        shards_.push_back(std::move(shard));
    }
    const ModelConfig& local = shards_.front().local;
    SE_RETURN_IF_ERROR(init_rank_backends({.device = config_.device,
                                           .num_threads = config_.num_threads,
                                           .max_step_tokens = max_step_tokens(),
                                           .max_seqs = config_.scheduler.max_num_seqs,
                                           .max_model_len = max_model_len_,
                                           .block_size = config_.block_size,
                                           .num_heads = local.num_heads,
                                           .head_dim = local.head_dim,
                                           .time_ops = config_.time_ops,
                                           .enforce_eager = config_.enforce_eager}));
    if (tp > 1) return {};  // each rank shards and uploads its own weights (init_models)
    if (ops_->host_memory()) return {};
    // The weights move to the device once; the host copy goes (an 8B model is 16 GB).
    SE_ASSIGN_OR_RETURN(
        WeightStore device,
        upload_weights(loaded_.weights, *ops_, ops_->activation_dtype(), config_.load.on_progress));
    loaded_.weights = std::move(device);
    return {};
}

int64_t Engine::max_step_tokens() const {
    const SchedulerConfig& sc = config_.scheduler;
    // A step is at most max_num_batched_tokens tokens, and never fewer than one per sequence.
    return std::max<int64_t>(sc.max_num_batched_tokens, sc.max_num_seqs);
}

Expected<int64_t> Engine::kv_cache_bytes(const Ops& ops) const {
    if (config_.kv_cache_memory_bytes > 0) return config_.kv_cache_memory_bytes;
    const std::optional<DeviceMemoryInfo> memory = ops.device_memory();
    if (!memory) return int64_t{4} << 30;  // host memory: --kv-cache-memory's default
    const float util = config_.gpu_memory_utilization;
    // What this process may use, less what the device already holds (weights, activations, and
    // anything else on it), less the logits and room for workspaces that grow with the step.
    const int64_t used = memory->total_bytes - memory->free_bytes;
    const int64_t logits = int64_t{config_.scheduler.max_num_seqs} * loaded_.config.vocab_size * 4;
    constexpr int64_t kWorkspaceReserve = int64_t{1} << 30;
    const auto budget = static_cast<int64_t>(static_cast<double>(memory->total_bytes) * util);
    const int64_t kv = budget - used - logits - kWorkspaceReserve;
    if (kv <= 0) {
        return resource_exhausted(fmt::format(
            "--gpu-memory-utilization {}: {:.1f} GiB of the GPU's {:.1f} GiB leave no room for "
            "the KV cache after {:.1f} GiB in use (weights, activations, other processes)",
            util, budget / 1073741824.0, memory->total_bytes / 1073741824.0, used / 1073741824.0));
    }
    return kv;
}

Status Engine::init_method() {
    if (config_.block_size <= 0 || config_.block_size > 1024) {
        return invalid_argument(
            fmt::format("--block-size must be in [1, 1024], got {}", config_.block_size));
    }
    SE_ASSIGN_OR_RETURN(DType kv_dtype, kv_dtype_of(config_.kv_cache_dtype, *ops_));
    if (!ops_->host_memory() && kv_dtype != ops_->activation_dtype()) {
        return invalid_argument(fmt::format("--kv-cache-dtype {}: the {} backend keeps KV in {}",
                                            config_.kv_cache_dtype, ops_->name(),
                                            dtype_name(ops_->activation_dtype())));
    }
    // Every rank's cache gets what the tightest rank can hold, so that their pools are equal.
    std::vector<int64_t> rank_bytes(static_cast<size_t>(tp_size()));
    SE_RETURN_IF_ERROR(for_each_rank([&](int32_t r) -> Status {
        SE_ASSIGN_OR_RETURN(rank_bytes[static_cast<size_t>(r)], kv_cache_bytes(rank_ops(r)));
        return {};
    }));
    const int64_t kv_bytes = *std::min_element(rank_bytes.begin(), rank_bytes.end());
    const ModelConfig& local = shards_.front().local;
    const PagedKvLayout kv_layout{.dtype = kv_dtype,
                                  .block_size = config_.block_size,
                                  .num_kv_heads = local.num_kv_heads,
                                  .head_dim = local.head_dim};
    const AttentionArgs args{.num_heads = local.num_heads,
                             .num_kv_heads = local.num_kv_heads,
                             .head_dim = local.head_dim,
                             .scale = 1.0f / std::sqrt(static_cast<float>(local.head_dim))};
    SE_RETURN_IF_ERROR(init_rank_methods(kv_layout, kv_bytes, args));
    // Blocks are shared only between requests that would compute the same KV: same model and
    // weight dtype, same method and knobs, same KV layout (the salt is mixed in per request).
    const std::string key = fmt::format(
        "{}|{}|{}|{}|{}|{}", loaded_.source_path, config_.load.dtype, config_.sparse_method,
        config_.sparse_config.dump(), dtype_name(kv_dtype), config_.block_size);
    cache_ns_base_ = XXH3_64bits(key.data(), key.size());
    return {};
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
        const auto bos = loaded_.bos_token ? loaded_.bos_token : name(tokenizer_->bos_id());
        const auto eos = loaded_.eos_token ? loaded_.eos_token : name(tokenizer_->eos_id());
        if (bos && !inputs.special_tokens.contains("bos_token")) {
            inputs.special_tokens["bos_token"] = *bos;
        }
        if (eos && !inputs.special_tokens.contains("eos_token")) {
            inputs.special_tokens["eos_token"] = *eos;
        }
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

}  // namespace se
