#include "eval/sample_set.h"

#include "eval/haystack.h"

namespace se::eval {

Expected<std::vector<EvalSample>> make_samples(const EvalTask& task, const SampleOptions& options,
                                               const PromptTokenCounter& counter) {
    std::vector<EvalSample> samples;
    for (int32_t i = 0; i < options.num_samples; ++i) {
        SampleRng rng(options.seed, task.name, i);
        const TaskSpec spec = task.make_spec(rng);
        SE_CHECK(spec.max_new_tokens <= kMaxAnswerTokens);
        SE_ASSIGN_OR_RETURN(FittedPrompt fitted, fit_prompt(spec, options.context_len, counter));
        EvalSample sample{.task = std::string(task.name),
                          .index = i,
                          .prompt = std::move(fitted.prompt),
                          .expected = spec.expected,
                          .depths = {},
                          .num_filler_sentences = fitted.num_sentences,
                          .num_prompt_tokens = fitted.num_tokens,
                          .max_new_tokens = spec.max_new_tokens};
        for (const Insertion& ins : spec.insertions) sample.depths.push_back(ins.depth);
        samples.push_back(std::move(sample));
    }
    return samples;
}

}  // namespace se::eval
