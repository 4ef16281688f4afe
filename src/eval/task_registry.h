// The tasks `sparse-engine eval --task` knows, by name.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "eval/sample_rng.h"
#include "eval/task_spec.h"

namespace se::eval {

struct EvalTask {
    std::string_view name;
    TaskSpec (*make_spec)(SampleRng& rng);
};

// Every task, in report order: passkey, needle, multikey, vartrack.
std::span<const EvalTask> all_tasks();

// "all" gives every task, a task's name that task; anything else is an error listing the names.
Expected<std::vector<EvalTask>> select_tasks(std::string_view name);

}  // namespace se::eval
