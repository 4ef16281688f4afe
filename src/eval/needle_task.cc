#include "eval/needle_task.h"

#include <fmt/core.h>

#include "eval/needle_values.h"

namespace se::eval {

std::string magic_number_prefix(const std::string& key) {
    return fmt::format("One of the special magic numbers for {} is:", key);
}

std::string magic_number_line(const std::string& key, const std::string& value) {
    return fmt::format("{} {}.", magic_number_prefix(key), value);
}

TaskSpec make_needle_spec(SampleRng& rng) {
    const std::string key = random_keys(rng, 1)[0];
    const std::string value = random_number(rng, 7);
    return {
        .instruction =
            "A special magic number is hidden within the following text. Make sure "
            "to memorize it. I will quiz you about the number afterwards.",
        .insertions = {{magic_number_line(key, value), rng.uniform_unit()}},
        .question = fmt::format("What is the special magic number for {}?", key),
        .answer_prefix = fmt::format("The special magic number for {} is", key),
        .expected = {value},
        .max_new_tokens = 16,
    };
}

}  // namespace se::eval
