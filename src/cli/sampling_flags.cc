#include "cli/sampling_flags.h"

namespace se::cli {

void add_sampling_flags(CLI::App& app, SamplingFlags& f) {
    SamplingParams& p = f.params;
    p.temperature = 0.0f;  // the CLI defaults to greedy decoding; pass --temperature to sample
    app.add_option("--temperature", p.temperature, "0 = greedy")->capture_default_str();
    app.add_option("--top-p", p.top_p, "nucleus mass in (0, 1]")->capture_default_str();
    app.add_option("--top-k", p.top_k, "keep the k most likely tokens (0 = off)")
        ->capture_default_str();
    app.add_option("--min-p", p.min_p, "keep tokens with p >= min_p * p_max")
        ->capture_default_str();
    app.add_option("--max-tokens", f.max_tokens, "tokens to generate (0: fill the context)")
        ->capture_default_str();
    app.add_option("--min-tokens", p.min_tokens, "tokens before EOS may end the output")
        ->capture_default_str();
    app.add_option("--presence-penalty", p.presence_penalty)->capture_default_str();
    app.add_option("--frequency-penalty", p.frequency_penalty)->capture_default_str();
    app.add_option("--repetition-penalty", p.repetition_penalty)->capture_default_str();
    app.add_option("--stop", p.stop, "stop string (repeatable); not included in the output");
    app.add_option("--stop-token-ids", p.stop_token_ids, "token ids that end the output");
    app.add_flag("--ignore-eos", p.ignore_eos, "keep generating after EOS");
    app.add_option("--logprobs", f.logprobs, "print the top-N logprobs of each token")
        ->capture_default_str();
    app.add_option("--sampling-seed", f.request_seed, "seed of this request's sampling")
        ->each([&f](const std::string&) { f.has_request_seed = true; });
}

SamplingParams to_sampling_params(const SamplingFlags& f) {
    SamplingParams p = f.params;
    p.max_tokens = f.max_tokens > 0 ? std::optional<int32_t>(f.max_tokens) : std::nullopt;
    if (f.logprobs >= 0) p.logprobs = f.logprobs;
    if (f.has_request_seed) p.seed = f.request_seed;
    return p;
}

}  // namespace se::cli
