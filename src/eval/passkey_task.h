// passkey: one line "The pass key is 71432. Remember it. 71432 is the pass key." hidden at a
// random depth; the model is asked for the number.
#pragma once

#include "eval/sample_rng.h"
#include "eval/task_spec.h"

namespace se::eval {

TaskSpec make_passkey_spec(SampleRng& rng);

}  // namespace se::eval
