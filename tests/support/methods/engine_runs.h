// Test-only: an engine on the harness's dummy model, run one request at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "engine/engine.h"
#include "support/greedy_params.h"
#include "support/test_files.h"

namespace se::testing {

// The harness model and weights (seed 1), float32, one thread, prefill chunks of `chunk`.
inline EngineConfig harness_engine_config(const TempDir& dir, const std::string& method,
                                          const nlohmann::json& knobs, int32_t chunk) {
    EngineConfig ec;
    ec.load = {.model = dir.path().string(), .load_format = "dummy", .dtype = "float32", .seed = 1};
    ec.sparse_method = method;
    ec.sparse_config = knobs;
    ec.kv_cache_memory_bytes = int64_t{64} << 20;
    ec.num_threads = 1;
    ec.scheduler.prefill_chunk_size = chunk;
    return ec;
}

inline std::unique_ptr<Engine> make_engine(const EngineConfig& ec) {
    auto engine = Engine::create(ec);
    SE_CHECK(engine.ok(), "%s", engine.status().to_string().c_str());
    return std::move(engine).value();
}

// Runs one request to completion (other requests may run beside it).
inline Expected<RequestOutput> run_to_end(Engine& engine, std::vector<int32_t> prompt,
                                          const SamplingParams& params,
                                          RequestOptions options = {}) {
    SE_ASSIGN_OR_RETURN(const RequestId id,
                        engine.add_request(std::move(prompt), params, std::move(options)));
    while (true) {
        SE_CHECK(engine.has_work(), "request %lld vanished", static_cast<long long>(id));
        engine.step();
        for (RequestOutput& out : engine.take_finished()) {
            if (out.id == id) return out;
        }
    }
}

}  // namespace se::testing
