// The engine's metrics, named as vLLM names them but under the prefix "sparse_engine:", every
// series labelled with the model name; rendered in the Prometheus text format.
#pragma once

#include <array>
#include <string>

#include "engine/metrics/metric.h"
#include "engine/sampling/stop_checker.h"

namespace se {

struct EngineMetrics {
    EngineMetrics();

    // Gauges, refreshed after every step.
    Gauge num_requests_running;
    Gauge num_requests_waiting;
    Gauge kv_cache_usage_perc;  // 0..1 of the method's pool
    // Counters.
    Counter prefix_cache_queries;  // tokens looked up
    Counter prefix_cache_hits;     // tokens found
    Counter num_preemptions;
    Counter prompt_tokens;                   // prompt tokens of finished requests
    Counter generation_tokens;               // tokens generated
    std::array<Counter, 3> request_success;  // by FinishReason: stop, length, abort
    std::array<Counter, 3> prune_jobs;       // pruning jobs ended: completed, blocked, failed
    Counter prune_freed_tokens;              // tokens completed pruning jobs freed
    // Histograms (seconds, or tokens for the last two).
    Histogram time_to_first_token_seconds;
    Histogram inter_token_latency_seconds;
    Histogram e2e_request_latency_seconds;
    Histogram request_queue_time_seconds;
    Histogram request_prompt_tokens;
    Histogram request_generation_tokens;
    Histogram iteration_tokens_total;

    // Prometheus exposition text (version 0.0.4).
    std::string render(const std::string& model_name) const;
};

}  // namespace se
