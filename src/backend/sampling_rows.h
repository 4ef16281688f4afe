// Sampling on a backend: what the engine's sampler hands a backend that draws tokens where the
// logits are (Ops::sample), so that only token ids travel back to the host.
#pragma once

#include <cstdint>

namespace se {

// One request's edits to one raw logit before temperature, combined by the host in the order the
// host sampler applies them (engine/sampling/sampler.h):
//   logit += bias; if (mask) logit = -inf;
//   if (repetition != 1) logit = logit > 0 ? logit / repetition : logit * repetition;
//   logit -= subtract;
// Each (row, token) appears at most once per step.
// A field that does not apply holds its identity: bias -0.0f (adding -0 changes no value, not
// even -0), repetition 1, subtract 0, mask 0.
struct LogitEdit {
    int32_t row = 0;
    int32_t token = 0;
    float bias = -0.0f;
    float repetition = 1.0f;
    float subtract = 0.0f;
    uint8_t mask = 0;
};

// How one row draws its token. temperature below the greedy threshold (kGreedyTemperature):
// the largest logit, the lowest id among equals. Otherwise the finite logits, top_k of them
// (0: all), weighed by exp((logit - max) / temperature), cut by top_p and min_p as the host
// sampler does, and the token where the running weight, in order of descending logit (ties to
// the lower id), first exceeds u * the total.
struct RowSampling {
    float temperature = 1.0f;
    int32_t top_k = 0;
    float top_p = 1.0f;
    float min_p = 0.0f;
    double u = 0.0;  // uniform in [0, 1), from the request's random stream
};

// The id that, in a forward pass's token ids, stands for row `row` of the tokens the backend
// sampled last (Ops::sample_async): an overlapped decode step is queued before the host knows
// them. Ordinary ids are >= 0, and -1 is left to mean a bad id.
constexpr int32_t fed_token_id(int32_t row) {
    return -2 - row;
}
// The sampled row a fed id stands for; the id must be <= fed_token_id(0).
constexpr int32_t fed_token_row(int32_t id) {
    return -2 - id;
}

}  // namespace se
