// Flags shared by every command that builds an engine, named as vLLM names them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/expected.h"
#include "engine/engine_config.h"

namespace se::cli {

struct EngineFlags {
    std::string model = "smollm2-135m";
    std::string load_format = "auto";
    std::string dtype = "auto";
    int32_t max_model_len = 0;
    int32_t block_size = 16;
    bool enable_prefix_caching = true;
    std::string served_model_name;
    std::string device = "auto";
    float gpu_memory_utilization = 0.9f;
    bool enforce_eager = false;
    bool async_scheduling = true;
    int32_t tensor_parallel_size = 1;
    std::string kv_cache_memory = "auto";
    std::string kv_cache_dtype = "auto";
    std::string sparse_method = "dense";
    std::string sparse_config = "{}";
    int32_t threads = 0;
    uint64_t seed = 0;
    int32_t max_num_seqs = 256;
    int32_t max_num_batched_tokens = 8192;
    int32_t prefill_chunk_size = 2048;
    std::string chain_cache_capacity = "1.0";
};

void add_engine_flags(CLI::App& app, EngineFlags& flags);

// Resolves the model alias and parses sizes and JSON; errors name the flag.
Expected<EngineConfig> to_engine_config(const EngineFlags& flags);

// "4GiB", "512MiB", "1G", "1000000" -> bytes.
Expected<int64_t> parse_byte_size(const std::string& text);

// "--chain-cache-capacity": a count of idle chains ("64") or a fraction of the KV pool ("0.5").
Expected<ChainLimits> parse_chain_capacity(const std::string& text);

}  // namespace se::cli
