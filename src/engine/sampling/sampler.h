// Turns one request's logits into its next token, in vLLM's order:
//
//   raw logits ──► (copy for logprobs, vLLM V1 "raw_logprobs" mode)
//     ──► logit_bias ──► min_tokens mask (EOS, stop_token_ids)
//     ──► repetition penalty (prompt + output) ──► frequency / presence (output)
//     ──► temperature < 1e-5 ? argmax (ties → lower id)
//                            : / temperature ──► top-k ──► top-p ──► min-p ──► draw
//
// top-k, top-p then min-p is vLLM V0's and SGLang's order; vLLM V1 applies min-p before top-p,
// which differs only when both are set.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backend/sampling_rows.h"
#include "engine/sampling/candidate_set.h"
#include "engine/sampling/logit_edit_planner.h"
#include "engine/sampling/logits_processors.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sampling/sampling_rng.h"
#include "engine/sampling/token_logprobs.h"

namespace se {

struct SamplerOptions {
    // The model's end-of-sequence ids: masked like stop_token_ids until min_tokens outputs
    // exist, unless the request sets ignore_eos.
    std::vector<int32_t> eos_token_ids{};
    // Seeds the draw when params.seed is unset; the engine passes its own seed mixed with a
    // request counter so that unseeded runs are reproducible too.
    uint64_t seed_if_unset = 0;
};

struct SampleResult {
    int32_t token = 0;
    // Set only when params.logprobs is: log_softmax of the logits as the model produced them,
    // before bias, penalties and temperature (vLLM V1's default).
    std::optional<SampledLogprobs> logprobs;
};

// One per request: owns the request's random stream and scratch buffers reused across steps.
class Sampler {
  public:
    // `params` must have passed validate() for the vocabulary the logits will cover.
    Sampler(SamplingParams params, SamplerOptions options);

    // `logits` (f32 [vocab]) is modified in place: on return it holds the logits after bias,
    // masking and penalties. `output_tokens` are the tokens generated so far, before this one.
    SampleResult sample(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                        std::span<const int32_t> output_tokens);

    // Sampling on a backend, in two halves. plan() appends this request's logit edits (row
    // `row`) to `edits` and returns how the row draws (one number from the request's random
    // stream unless greedy); finish() turns the backend's token into the result, with logprobs
    // from `raw_logits` (the row before any edit; read only when params.logprobs is set).
    RowSampling plan(int32_t row, std::span<const int32_t> prompt_tokens,
                     std::span<const int32_t> output_tokens, std::vector<LogitEdit>& edits);
    SampleResult finish(int32_t token, std::span<const float> raw_logits) const;

    const SamplingParams& params() const { return params_; }

  private:
    void process_logits(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                        std::span<const int32_t> output_tokens);
    int32_t draw(std::span<const float> logits);

    SamplingParams params_;
    std::vector<int32_t> min_tokens_masked_;  // stop_token_ids, plus EOS unless ignore_eos
    SamplingRng rng_;
    PenaltyApplier penalties_;
    LogitEditPlanner edit_planner_;
    CandidateSet candidates_;
    std::vector<float> raw_logits_;  // f32 [vocab]: kept only when logprobs are requested
};

// Index of the largest logit, the lowest index among equals (NaN never wins unless all are NaN).
int32_t argmax_lowest_id(std::span<const float> logits /* f32 [vocab] */);

}  // namespace se
