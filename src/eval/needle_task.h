// needle (RULER's single needle): "One of the special magic numbers for <key> is: <7 digits>."
// hidden at a random depth; the model is asked for the number of that key.
#pragma once

#include "eval/sample_rng.h"
#include "eval/task_spec.h"

namespace se::eval {

TaskSpec make_needle_spec(SampleRng& rng);

// "One of the special magic numbers for <key> is:", the needle line up to its value.
std::string magic_number_prefix(const std::string& key);

// The needle line for `key` and `value`, shared with multikey.
std::string magic_number_line(const std::string& key, const std::string& value);

}  // namespace se::eval
