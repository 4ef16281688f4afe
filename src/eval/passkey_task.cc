#include "eval/passkey_task.h"

#include <fmt/core.h>

#include "eval/needle_values.h"

namespace se::eval {

TaskSpec make_passkey_spec(SampleRng& rng) {
    const std::string key = random_number(rng, 5);
    return {
        .instruction =
            "There is an important piece of information hidden inside a lot of "
            "irrelevant text. Find it and memorize it. I will quiz you about it.",
        .insertions = {{fmt::format("The pass key is {0}. Remember it. {0} is the pass key.", key),
                        rng.uniform_unit()}},
        .question = "What is the pass key? Answer with the number only.",
        .answer_prefix = "The pass key is:",
        .expected = {key},
        .max_new_tokens = 12,
    };
}

}  // namespace se::eval
