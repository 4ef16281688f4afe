#include "eval/task_registry.h"

#include <fmt/core.h>

#include <array>

#include "eval/multikey_task.h"
#include "eval/needle_task.h"
#include "eval/passkey_task.h"
#include "eval/vartrack_task.h"

namespace se::eval {

std::span<const EvalTask> all_tasks() {
    static constexpr std::array<EvalTask, 4> kTasks = {{{"passkey", make_passkey_spec},
                                                        {"needle", make_needle_spec},
                                                        {"multikey", make_multikey_spec},
                                                        {"vartrack", make_vartrack_spec}}};
    return kTasks;
}

Expected<std::vector<EvalTask>> select_tasks(std::string_view name) {
    const std::span<const EvalTask> tasks = all_tasks();
    if (name == "all") return std::vector<EvalTask>(tasks.begin(), tasks.end());
    std::string names;
    for (const EvalTask& task : tasks) {
        if (task.name == name) return std::vector<EvalTask>{task};
        names += std::string(task.name) + ", ";
    }
    return invalid_argument(fmt::format("unknown task '{}' (known: {}all)", name, names));
}

}  // namespace se::eval
