// Random keys and values for needles: numbers of a fixed digit count, adjective-noun keys (as
// RULER's "special magic numbers for <key>"), and five-letter variable names.
#pragma once

#include <string>
#include <vector>

#include "eval/sample_rng.h"

namespace se::eval {

// `num_digits` decimal digits, the first never 0.
std::string random_number(SampleRng& rng, int32_t num_digits);

// `count` distinct keys like "quiet-harbor".
std::vector<std::string> random_keys(SampleRng& rng, int32_t count);

// `count` distinct upper-case names of five letters, like "QXRTB".
std::vector<std::string> random_var_names(SampleRng& rng, int32_t count);

}  // namespace se::eval
