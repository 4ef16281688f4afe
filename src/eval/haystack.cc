#include "eval/haystack.h"

#include <fmt/core.h>

#include <cmath>

#include "eval/filler.h"

namespace se::eval {
namespace {

int32_t sentence_before(double depth, int32_t num_sentences) {
    return static_cast<int32_t>(std::lround(depth * num_sentences));
}

// The search below finds the largest count of sentences whose prompt fits. A counter that never
// grows would make it loop; no real tokenizer spends less than a token per 8 sentences.
int64_t max_sentences(int32_t target_tokens) {
    return 8 * static_cast<int64_t>(target_tokens) + 64;
}

}  // namespace

EvalPrompt render_prompt(const TaskSpec& spec, int32_t num_sentences) {
    std::string haystack;
    size_t next = 0;  // the first insertion not yet placed
    for (int32_t i = 0; i <= num_sentences; ++i) {
        for (; next < spec.insertions.size() &&
               sentence_before(spec.insertions[next].depth, num_sentences) <= i;
             ++next) {
            if (!haystack.empty() && haystack.back() != '\n') haystack.push_back('\n');
            haystack += spec.insertions[next].text + "\n";
        }
        if (i == num_sentences) break;
        if (!haystack.empty() && haystack.back() != '\n') haystack.push_back(' ');
        haystack += filler_sentence(i);
    }
    if (!haystack.empty() && haystack.back() != '\n') haystack.push_back('\n');
    return {.user = fmt::format("{}\n\n{}\n{}", spec.instruction, haystack, spec.question),
            .answer_prefix = spec.answer_prefix};
}

Expected<FittedPrompt> fit_prompt(const TaskSpec& spec, int32_t target_tokens,
                                  const PromptTokenCounter& counter) {
    auto count = [&](int64_t n) {
        return counter.count_tokens(render_prompt(spec, static_cast<int32_t>(n)));
    };
    SE_ASSIGN_OR_RETURN(const int32_t base, count(0));
    if (base > target_tokens) {
        return out_of_range(
            fmt::format("{} tokens cannot hold the prompt: without filler it already has {} tokens",
                        target_tokens, base));
    }
    // Invariant: `lo` sentences fit, `hi` do not. Start from a linear estimate, widen the bracket
    // by doubling steps, then bisect: a handful of counts instead of one per sentence.
    constexpr int64_t kProbe = 64;
    SE_ASSIGN_OR_RETURN(const int32_t probe, count(kProbe));
    const double per_sentence = std::max(1e-3, double(probe - base) / kProbe);
    const int64_t limit = max_sentences(target_tokens);
    const auto guess =
        std::min<int64_t>(limit, std::llround((target_tokens - base) / per_sentence));
    int64_t lo = 0;
    int64_t hi = limit + 1;
    SE_ASSIGN_OR_RETURN(const int32_t at_guess, count(guess));
    if (at_guess <= target_tokens) {
        lo = guess;
        for (int64_t step = 1; lo + step <= limit; step *= 2) {
            SE_ASSIGN_OR_RETURN(const int32_t n, count(lo + step));
            if (n > target_tokens) {
                hi = lo + step;
                break;
            }
            lo += step;
        }
    } else {
        hi = guess;
        for (int64_t step = 1; hi - step > 0; step *= 2) {
            SE_ASSIGN_OR_RETURN(const int32_t n, count(hi - step));
            if (n <= target_tokens) {
                lo = hi - step;
                break;
            }
            hi -= step;
        }
    }
    if (hi > limit) {
        return internal_error("the prompt token counter does not grow with the filler");
    }
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        SE_ASSIGN_OR_RETURN(const int32_t n, count(mid));
        (n <= target_tokens ? lo : hi) = mid;
    }
    FittedPrompt fitted{.prompt = render_prompt(spec, static_cast<int32_t>(lo)),
                        .num_sentences = static_cast<int32_t>(lo)};
    SE_ASSIGN_OR_RETURN(fitted.num_tokens, counter.count_tokens(fitted.prompt));
    return fitted;
}

}  // namespace se::eval
