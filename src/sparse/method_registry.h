// Methods by id. Each method's folder registers a factory from a static initialiser, so adding a
// method never edits core code; the core creates methods by the id the user names.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backend/communicator.h"
#include "backend/kv_layout.h"
#include "backend/ops.h"
#include "core/expected.h"
#include "model/model_config.h"
#include "sparse/cache_manager.h"
#include "sparse/method_runtime.h"

namespace se {

struct MethodContext {
    const ModelConfig& model;
    Ops& ops;                           // the backend the method's kernels run on
    PagedKvLayout kv_layout;            // dtype, block size, kv heads, head dim
    int64_t kv_cache_bytes = 0;         // memory the method's cache may take
    const nlohmann::json& knobs;        // the method's options (--sparse-config), an object
    bool enable_prefix_caching = true;  // --enable-prefix-caching (methods keeping full history)
    int32_t max_step_tokens = 0;        // most tokens one sequence adds in a step (prefill chunk)
    int32_t num_threads = 0;            // CPU threads the method's own scoring may use (0: all)
    // Tensor parallelism: the rank's group (null: one rank). `model` and `kv_layout` are then the
    // rank's shard (its query and KV heads); decisions that rank entries for every head (shared
    // sets, budgets across heads) reduce their scores through `comm` so every rank decides alike.
    Communicator* comm = nullptr;
};

struct Method {
    std::unique_ptr<MethodRuntime> runtime;
    std::unique_ptr<CacheManager> cache;
};

using MethodFactory = Expected<Method> (*)(const MethodContext& context);

class MethodRegistry {
  public:
    void add(std::string id, MethodFactory factory);
    // Unknown ids fail with a message listing the known ones.
    Expected<Method> create(std::string_view id, const MethodContext& context) const;
    std::vector<std::string> ids() const;

  private:
    std::map<std::string, MethodFactory, std::less<>> factories_;
};

// The registry that src/methods/ fills at start-up. Function-local so that registration from
// static initialisers in any translation unit sees it constructed.
MethodRegistry& builtin_methods();

// Placed at namespace scope in a method's .cc file:
//   const MethodRegistration kRegistration{"dense", &create_dense};
struct MethodRegistration {
    MethodRegistration(const char* id, MethodFactory factory);
};

// Fails with a message naming the first knob not in `known` (for a method's factory).
Status check_known_knobs(std::string_view method, const nlohmann::json& knobs,
                         const std::vector<std::string>& known);

}  // namespace se
