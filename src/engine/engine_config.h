// Everything an Engine is built from. Field names follow the vLLM flags they come from.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/scheduler.h"
#include "kv/chain_cache.h"
#include "model/model_loader.h"

namespace se {

struct EngineConfig {
    LoadOptions load;                     // --model, --load-format, --dtype
    int32_t max_model_len = 0;            // 0: the model's max_position_embeddings
    int32_t block_size = 16;              // --block-size: KV entries per block
    bool enable_prefix_caching = true;    // --enable-prefix-caching / --no-enable-prefix-caching
    std::string served_model_name;        // --served-model-name (metrics label; default: the path)
    std::string device = "cpu";           // --device: auto | cpu | cuda (backend_factory.h)
    float gpu_memory_utilization = 0.9f;  // --gpu-memory-utilization: share of the GPU's memory
    bool time_ops = false;       // GPU: device time per op kind at exit (SE_CUDA_OP_TIMES=1)
    bool enforce_eager = false;  // --enforce-eager: GPU decode steps without CUDA graphs
    // --async-scheduling / --no-async-scheduling: queue each decode step before the tokens of
    // the one before are on the host, where the backend and the requests allow it (engine.h).
    bool async_scheduling = true;
    // --kv-cache-memory; 0: 4 GiB on the CPU, on a GPU what --gpu-memory-utilization leaves
    // after weights and activations.
    int64_t kv_cache_memory_bytes = 0;
    std::string kv_cache_dtype = "auto";  // auto (F32 on the CPU) | float32 | bfloat16 | float16
    std::string sparse_method;            // --sparse-method (a registered method id)
    nlohmann::json sparse_config = nlohmann::json::object();  // --sparse-config
    int32_t num_threads = 0;                                  // --threads; 0 = every core
    // --tensor-parallel-size: ranks the model is split over (one GPU each on cuda; on the CPU,
    // threads sharing --threads' cores).
    int32_t tensor_parallel_size = 1;
    uint64_t seed = 0;          // --seed: requests without their own seed derive one
    SchedulerConfig scheduler;  // --max-num-seqs, --max-num-batched-tokens, ...
    ChainLimits chain_cache;    // --chain-cache-capacity
};

}  // namespace se
