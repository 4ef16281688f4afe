#include "engine/sampling/token_logprobs.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace se {
namespace {

bool ranks_before(float logit_a, int32_t token_a, float logit_b, int32_t token_b) {
    return logit_a > logit_b || (logit_a == logit_b && token_a < token_b);
}

// Fills out.top[0, n) with the n largest logits (held in .logprob until the caller normalises) by
// insertion into a short sorted array: n <= 20, so most logits fail one comparison against the
// current last entry.
void select_top(std::span<const float> logits, int32_t n, SampledLogprobs& out) {
    out.num_top = 0;
    if (n == 0) return;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float logit = logits[i];
        const auto token = static_cast<int32_t>(i);
        int32_t pos = out.num_top;
        if (pos == n) {
            const TokenLogprob& last = out.top[n - 1];
            if (!ranks_before(logit, token, last.logprob, last.token)) continue;
            --pos;
        } else {
            ++out.num_top;
        }
        while (pos > 0 &&
               ranks_before(logit, token, out.top[pos - 1].logprob, out.top[pos - 1].token)) {
            out.top[pos] = out.top[pos - 1];
            --pos;
        }
        out.top[pos] = {token, logit};
    }
}

}  // namespace

float log_sum_exp(std::span<const float> logits) {
    // Each exp is taken in float (its error is relative and tiny); the sum of 150k terms is what
    // needs double precision.
    float max_logit = -std::numeric_limits<float>::infinity();
    double sum = 0.0;
    for (const float logit : logits) {
        if (logit == -std::numeric_limits<float>::infinity()) continue;
        if (logit > max_logit) {
            sum = sum * std::exp(max_logit - logit) + 1.0;
            max_logit = logit;
        } else {
            sum += std::exp(logit - max_logit);
        }
    }
    return max_logit + static_cast<float>(std::log(sum));
}

SampledLogprobs compute_sampled_logprobs(std::span<const float> logits, int32_t token,
                                         int32_t num_top) {
    SE_CHECK(token >= 0 && static_cast<size_t>(token) < logits.size(), "token %d", token);
    SE_CHECK(num_top >= 0 && num_top <= kMaxLogprobs, "num_top %d", num_top);
    SampledLogprobs out;
    const float normaliser = log_sum_exp(logits);
    select_top(logits, num_top, out);
    for (int32_t i = 0; i < out.num_top; ++i) out.top[i].logprob -= normaliser;
    const float logit = logits[token];
    out.logprob = logit - normaliser;
    out.rank = 1;
    for (size_t i = 0; i < logits.size(); ++i)
        out.rank += ranks_before(logits[i], static_cast<int32_t>(i), logit, token) ? 1 : 0;
    return out;
}

}  // namespace se
