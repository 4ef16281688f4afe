// The vanilla method through the same contract as every sparse one: full KV, full reads.
#include "sparse/full_cache_manager.h"
#include "sparse/method_registry.h"

namespace se {
namespace {

class DenseRuntime final : public MethodRuntime {
  public:
    // Full selections: nothing of q or the cache is read outside the attention kernels.
    bool reads_activations_on_host() const override { return false; }
    // Nothing runs between steps: a step may be queued behind the one before.
    bool overlaps_steps() const override { return true; }
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
};

Expected<Method> create_dense(const MethodContext& context) {
    SE_RETURN_IF_ERROR(check_known_knobs("dense", context.knobs, {}));
    SE_ASSIGN_OR_RETURN(PagedKvStore store, make_full_kv_store(context));
    return Method{.runtime = std::make_unique<DenseRuntime>(),
                  .cache = std::make_unique<FullCacheManager>(
                      context.ops, std::move(store),
                      FullCacheOptions{.enable_prefix_caching = context.enable_prefix_caching,
                                       // Pruning scores keys with host code (CPU only).
                                       .allow_pruning = context.ops.host_memory(),
                                       .full_selections_only = true})};
}

const MethodRegistration kRegistration{"dense", &create_dense};

}  // namespace
}  // namespace se
