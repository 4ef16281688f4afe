#include "engine/metrics/engine_metrics.h"

#include <fmt/core.h>

namespace se {
namespace {

constexpr const char* kPrefix = "sparse_engine:";

std::vector<double> latency_buckets() {
    return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
            0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}

std::vector<double> token_buckets() {
    return {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
}

// A label value with Prometheus escaping (backslash, quote, newline).
std::string escape(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    return out;
}

class Writer {
  public:
    explicit Writer(const std::string& model) : labels_("model_name=\"" + escape(model) + "\"") {}

    void header(const char* name, const char* type, const char* help) {
        out_ += fmt::format("# HELP {}{} {}\n# TYPE {}{} {}\n", kPrefix, name, help, kPrefix, name,
                            type);
    }
    void sample(const std::string& name, const std::string& extra_labels, double value) {
        const std::string labels = extra_labels.empty() ? labels_ : labels_ + "," + extra_labels;
        out_ += fmt::format("{}{}{{{}}} {}\n", kPrefix, name, labels, value);
    }
    void gauge(const char* name, const char* help, const Gauge& g) {
        header(name, "gauge", help);
        sample(name, "", g.value());
    }
    void counter(const char* name, const char* help, const Counter& c) {
        header(name, "counter", help);
        sample(std::string(name) + "_total", "", c.value());
    }
    void histogram(const char* name, const char* help, const Histogram& h) {
        header(name, "histogram", help);
        const auto cumulative = h.cumulative_counts();
        for (size_t i = 0; i < h.bounds().size(); ++i) {
            sample(std::string(name) + "_bucket", fmt::format("le=\"{}\"", h.bounds()[i]),
                   static_cast<double>(cumulative[i]));
        }
        sample(std::string(name) + "_bucket", "le=\"+Inf\"", static_cast<double>(h.count()));
        sample(std::string(name) + "_sum", "", h.sum());
        sample(std::string(name) + "_count", "", static_cast<double>(h.count()));
    }
    std::string take() { return std::move(out_); }

  private:
    std::string labels_;
    std::string out_;
};

}  // namespace

EngineMetrics::EngineMetrics()
    : time_to_first_token_seconds(latency_buckets()),
      inter_token_latency_seconds(latency_buckets()),
      e2e_request_latency_seconds(latency_buckets()),
      request_queue_time_seconds(latency_buckets()),
      request_prompt_tokens(token_buckets()),
      request_generation_tokens(token_buckets()),
      iteration_tokens_total(token_buckets()) {}

std::string EngineMetrics::render(const std::string& model_name) const {
    Writer w(model_name);
    w.gauge("num_requests_running", "Requests in model execution batches.", num_requests_running);
    w.gauge("num_requests_waiting", "Requests waiting to be processed.", num_requests_waiting);
    w.gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
            kv_cache_usage_perc);
    w.counter("prefix_cache_queries", "Prefix cache queries, in tokens.", prefix_cache_queries);
    w.counter("prefix_cache_hits", "Prefix cache hits, in tokens.", prefix_cache_hits);
    w.counter("num_preemptions", "Cumulative number of preemptions.", num_preemptions);
    w.counter("prompt_tokens", "Number of prefill tokens processed.", prompt_tokens);
    w.counter("generation_tokens", "Number of generation tokens processed.", generation_tokens);
    w.header("request_success", "counter", "Count of successfully processed requests.");
    for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort}) {
        w.sample("request_success_total",
                 fmt::format("finished_reason=\"{}\"", finish_reason_name(r)),
                 request_success[static_cast<size_t>(r)].value());
    }
    w.header("prune_jobs", "counter", "Prefix-cache and chain pruning jobs that ended.");
    const char* prune_states[] = {"completed", "blocked", "failed"};
    for (size_t i = 0; i < prune_jobs.size(); ++i) {
        w.sample("prune_jobs_total", fmt::format("state=\"{}\"", prune_states[i]),
                 prune_jobs[i].value());
    }
    w.counter("prune_freed_tokens", "Tokens freed by pruning jobs.", prune_freed_tokens);
    w.histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                time_to_first_token_seconds);
    w.histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                inter_token_latency_seconds);
    w.histogram("e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                e2e_request_latency_seconds);
    w.histogram("request_queue_time_seconds", "Histogram of time spent waiting in seconds.",
                request_queue_time_seconds);
    w.histogram("request_prompt_tokens", "Number of prefill tokens processed.",
                request_prompt_tokens);
    w.histogram("request_generation_tokens", "Number of generation tokens processed.",
                request_generation_tokens);
    w.histogram("iteration_tokens_total", "Histogram of number of tokens per engine step.",
                iteration_tokens_total);
    return w.take();
}

}  // namespace se
