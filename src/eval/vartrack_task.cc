#include "eval/vartrack_task.h"

#include <fmt/core.h>

#include <algorithm>

#include "eval/needle_values.h"

namespace se::eval {

TaskSpec make_vartrack_spec(SampleRng& rng) {
    const std::vector<std::string> names = random_var_names(rng, kNumVartrackHops + 1);
    const std::string value = random_number(rng, 5);
    std::vector<double> depths;
    for (size_t i = 0; i < names.size(); ++i) depths.push_back(rng.uniform_unit());
    std::sort(depths.begin(), depths.end());
    std::vector<Insertion> chain;
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string& source = i == 0 ? value : names[i - 1];
        chain.push_back({fmt::format("VAR {} = {}", names[i], source), depths[i]});
    }
    return {
        .instruction =
            "Memorize and track the chain of variable assignments hidden in the "
            "following text.",
        .insertions = std::move(chain),
        .question = fmt::format("Find all variables that are assigned the value {} in the text "
                                "above.",
                                value),
        // RULER's answer prefix; the trailing "VAR" starts the tiny models on copying names
        // instead of filler.
        .answer_prefix = fmt::format("According to the chain of variable assignments in the text "
                                     "above, {} variables are assigned the value {}, they are: VAR",
                                     names.size(), value),
        .expected = names,
        .max_new_tokens = 64,
    };
}

}  // namespace se::eval
