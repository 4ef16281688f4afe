#include "cli/engine_flags.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "model/model_resolver.h"
#include "model/text_file.h"

namespace se::cli {

void add_engine_flags(CLI::App& app, EngineFlags& f) {
    app.add_option("-m,--model", f.model,
                   "GGUF file, HF model directory, or the alias smollm2-135m")
        ->capture_default_str();
    app.add_option("--load-format", f.load_format, "auto | gguf | safetensors | dummy")
        ->capture_default_str();
    app.add_option("--dtype", f.dtype, "weight dtype: auto | float32 | bfloat16 | float16")
        ->capture_default_str();
    app.add_option("--max-model-len", f.max_model_len, "context length in tokens (0: the model's)")
        ->capture_default_str();
    app.add_option("--block-size", f.block_size, "KV cache block size in tokens")
        ->capture_default_str();
    app.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", f.enable_prefix_caching,
                 "reuse the KV of shared prompt prefixes")
        ->capture_default_str();
    app.add_option("--served-model-name", f.served_model_name,
                   "model name in responses and metrics (default: the model path)");
    app.add_option("--device", f.device, "auto (cuda when a GPU is usable, else cpu) | cpu | cuda")
        ->capture_default_str();
    app.add_option("--gpu-memory-utilization", f.gpu_memory_utilization,
                   "share of the GPU's memory for weights, activations and the KV cache")
        ->capture_default_str();
    app.add_flag("--enforce-eager", f.enforce_eager,
                 "GPU: launch every step's kernels from the host (no CUDA graphs for decode)");
    app.add_flag("--async-scheduling,!--no-async-scheduling", f.async_scheduling,
                 "GPU: queue each decode step before the previous step's tokens reach the host "
                 "(where the method and the requests' sampling allow it)")
        ->capture_default_str();
    app.add_option("--tensor-parallel-size", f.tensor_parallel_size,
                   "split the model over this many ranks (GPUs 0..N-1 on cuda; on the CPU, "
                   "threads sharing --threads' cores)")
        ->capture_default_str();
    app.add_option("--kv-cache-memory", f.kv_cache_memory,
                   "memory for the KV cache, e.g. 4GiB (auto: 4GiB on the CPU, on a GPU what "
                   "--gpu-memory-utilization leaves)")
        ->capture_default_str();
    app.add_option("--kv-cache-dtype", f.kv_cache_dtype,
                   "auto (float32 on the CPU) | float32 | bfloat16 | float16")
        ->capture_default_str();
    app.add_option("--sparse-method", f.sparse_method, "KV cache method id")->capture_default_str();
    app.add_option("--sparse-config", f.sparse_config,
                   "the method's knobs: a JSON object, or @file holding one")
        ->capture_default_str();
    app.add_option("-t,--threads", f.threads, "CPU threads (0: all cores)")->capture_default_str();
    app.add_option("--seed", f.seed, "seed for requests that set none")->capture_default_str();
    app.add_option("--max-num-seqs", f.max_num_seqs, "most sequences in one step")
        ->capture_default_str();
    app.add_option("--max-num-batched-tokens", f.max_num_batched_tokens, "most tokens in one step")
        ->capture_default_str();
    app.add_option("--prefill-chunk-size", f.prefill_chunk_size,
                   "longest piece of one prompt in one step")
        ->capture_default_str();
    app.add_option("--chain-cache-capacity", f.chain_cache_capacity,
                   "idle Chain Cache chains kept: a count (64) or a fraction of the KV pool (0.5)")
        ->capture_default_str();
}

Expected<ChainLimits> parse_chain_capacity(const std::string& text) {
    const bool fraction = text.find('.') != std::string::npos;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(value >= 0.0) ||
        (fraction ? value == 0.0 || value > 1.0 : value != std::floor(value) || value > 1e9)) {
        return invalid_argument(
            fmt::format("--chain-cache-capacity: '{}' is neither a count of chains (64) nor a "
                        "fraction of the pool in (0, 1] (0.5)",
                        text));
    }
    if (fraction) return ChainLimits{.max_idle_chains = -1, .max_idle_pool_fraction = value};
    return ChainLimits{.max_idle_chains = static_cast<int32_t>(value),
                       .max_idle_pool_fraction = 1.0};
}

Expected<int64_t> parse_byte_size(const std::string& text) {
    size_t pos = 0;
    while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) != 0)) ++pos;
    if (pos == 0 || pos > 15) {
        return invalid_argument(fmt::format("'{}' is not a size like 4GiB or 512MiB", text));
    }
    const int64_t number = std::stoll(text.substr(0, pos));
    const std::string unit = text.substr(pos);
    int64_t scale = 0;
    if (unit.empty() || unit == "B") scale = 1;
    if (unit == "K" || unit == "KiB" || unit == "KB") scale = int64_t{1} << 10;
    if (unit == "M" || unit == "MiB" || unit == "MB") scale = int64_t{1} << 20;
    if (unit == "G" || unit == "GiB" || unit == "GB") scale = int64_t{1} << 30;
    if (unit == "T" || unit == "TiB" || unit == "TB") scale = int64_t{1} << 40;
    if (scale == 0) {
        return invalid_argument(
            fmt::format("'{}' has unknown unit '{}' (use B, KiB, MiB, GiB)", text, unit));
    }
    return number * scale;
}

Expected<EngineConfig> to_engine_config(const EngineFlags& f) {
    EngineConfig config;
    auto resolved = resolve_model_path(f.model);
    if (!resolved.ok()) return resolved.status().with_context("--model");
    config.load = {.model = resolved.value(),
                   .load_format = f.load_format,
                   .dtype = f.dtype,
                   .seed = f.seed,
                   .on_progress = {}};
    config.max_model_len = f.max_model_len;
    config.block_size = f.block_size;
    config.enable_prefix_caching = f.enable_prefix_caching;
    config.served_model_name = f.served_model_name;
    if (f.kv_cache_memory != "auto") {
        auto bytes = parse_byte_size(f.kv_cache_memory);
        if (!bytes.ok()) return bytes.status().with_context("--kv-cache-memory");
        if (bytes.value() <= 0) return invalid_argument("--kv-cache-memory must be positive");
        config.kv_cache_memory_bytes = bytes.value();
    }
    config.device = f.device;  // checked by the engine (backend_factory.h)
    config.gpu_memory_utilization = f.gpu_memory_utilization;  // checked by the engine
    config.enforce_eager = f.enforce_eager;
    config.async_scheduling = f.async_scheduling;
    if (f.tensor_parallel_size < 1) return invalid_argument("--tensor-parallel-size must be >= 1");
    config.tensor_parallel_size = f.tensor_parallel_size;
    // A diagnosis switch, not a flag: where a GPU step's time goes (docs/gpu.md).
    const char* op_times = std::getenv("SE_CUDA_OP_TIMES");
    config.time_ops = op_times != nullptr && std::string_view(op_times) == "1";
    config.kv_cache_dtype = f.kv_cache_dtype;
    config.sparse_method = f.sparse_method;
    // A JSON object, or @path to a file holding one.
    std::string sparse_config = f.sparse_config;
    if (sparse_config.starts_with("@")) {
        auto text = read_text_file(sparse_config.substr(1));
        if (!text.ok()) return text.status().with_context("--sparse-config");
        sparse_config = std::move(text).value();
    }
    config.sparse_config = nlohmann::json::parse(sparse_config, nullptr, false);
    if (config.sparse_config.is_discarded() || !config.sparse_config.is_object()) {
        return invalid_argument(
            fmt::format("--sparse-config: '{}' is not a JSON object", f.sparse_config));
    }
    if (f.threads < 0) return invalid_argument("--threads must be >= 0");
    config.num_threads = f.threads;
    config.seed = f.seed;
    if (f.max_num_seqs < 1) return invalid_argument("--max-num-seqs must be >= 1");
    if (f.max_num_batched_tokens < 1) {
        return invalid_argument("--max-num-batched-tokens must be >= 1");
    }
    if (f.prefill_chunk_size < 1) return invalid_argument("--prefill-chunk-size must be >= 1");
    config.scheduler = {.max_num_seqs = f.max_num_seqs,
                        .max_num_batched_tokens = f.max_num_batched_tokens,
                        .prefill_chunk_size = f.prefill_chunk_size};
    SE_ASSIGN_OR_RETURN(config.chain_cache, parse_chain_capacity(f.chain_cache_capacity));
    return config;
}

}  // namespace se::cli
