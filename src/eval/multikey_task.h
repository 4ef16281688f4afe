// multikey (RULER's multi-key needle): several magic-number needles with different keys at
// random depths; the model is asked for the number of one key, the others are distractors.
#pragma once

#include "eval/sample_rng.h"
#include "eval/task_spec.h"

namespace se::eval {

inline constexpr int32_t kNumMultikeyNeedles = 4;

TaskSpec make_multikey_spec(SampleRng& rng);

}  // namespace se::eval
