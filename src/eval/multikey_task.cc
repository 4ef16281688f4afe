#include "eval/multikey_task.h"

#include <fmt/core.h>

#include <algorithm>

#include "eval/needle_task.h"
#include "eval/needle_values.h"

namespace se::eval {

TaskSpec make_multikey_spec(SampleRng& rng) {
    const std::vector<std::string> keys = random_keys(rng, kNumMultikeyNeedles);
    std::vector<std::string> values;
    while (static_cast<int32_t>(values.size()) < kNumMultikeyNeedles) {
        std::string v = random_number(rng, 7);
        if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    TaskSpec spec;
    spec.instruction =
        "Some special magic numbers are hidden within the following text. Make sure to memorize "
        "them. I will quiz you about one of them afterwards.";
    for (int32_t i = 0; i < kNumMultikeyNeedles; ++i) {
        spec.insertions.push_back({magic_number_line(keys[i], values[i]), rng.uniform_unit()});
    }
    std::stable_sort(spec.insertions.begin(), spec.insertions.end(),
                     [](const Insertion& a, const Insertion& b) { return a.depth < b.depth; });
    const auto asked = static_cast<size_t>(rng.uniform_int(0, kNumMultikeyNeedles - 1));
    spec.question = fmt::format("What is the special magic number for {}?", keys[asked]);
    // The needle's own wording: it points a small model at the right one of the look-alike
    // needles more often than a paraphrase does (SmolLM2-135M favours the latest needle).
    spec.answer_prefix = magic_number_prefix(keys[asked]);
    spec.expected = {values[asked]};
    spec.max_new_tokens = 16;
    return spec;
}

}  // namespace se::eval
