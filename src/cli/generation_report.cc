#include "cli/generation_report.h"

#include <fmt/core.h>

namespace se::cli {
namespace {

// A token's text as a JSON string, so whitespace and control bytes stay visible.
std::string token_json(const Tokenizer& tok, int32_t id) {
    auto text = tok.decode(std::span<const int32_t>(&id, 1));
    return nlohmann::json(text.ok() ? text.value() : std::string("?"))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void print_throughput(const RequestOutput& out) {
    const RequestTimings& t = out.timings;
    const double prefill_tps =
        t.prefill_seconds > 0 ? out.usage.prompt_tokens / t.prefill_seconds : 0;
    // The first output token comes from the prefill step; decode steps produce the rest.
    const int32_t decoded = std::max(0, out.usage.completion_tokens - 1);
    const double decode_tps = t.decode_seconds > 0 ? decoded / t.decode_seconds : 0;
    const std::string finish =
        out.finish_reason ? std::string(finish_reason_name(*out.finish_reason)) : "running";
    fmt::print(stderr,
               "prompt {} tokens, prefill {:.1f} tok/s | output {} tokens, decode {:.1f} tok/s | "
               "finish {}\n",
               out.usage.prompt_tokens, prefill_tps, out.usage.completion_tokens, decode_tps,
               finish);
}

void print_logprobs(const Engine& engine, const RequestOutput& out) {
    const Tokenizer& tok = engine.tokenizer();
    for (size_t i = 0; i < out.logprobs.size() && i < out.token_ids.size(); ++i) {
        const SampledLogprobs& lp = out.logprobs[i];
        std::string line = fmt::format("{:5d} {:>12} {:9.4f}", out.token_ids[i],
                                       token_json(tok, out.token_ids[i]), lp.logprob);
        for (const TokenLogprob& alt : lp.top_logprobs()) {
            line += fmt::format("  {}={:.4f}", token_json(tok, alt.token), alt.logprob);
        }
        fmt::print(stderr, "{}\n", line);
    }
}

}  // namespace se::cli
