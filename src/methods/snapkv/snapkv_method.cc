// SnapKV: knobs, cache manager and registration. The rule is in snapkv_runtime.h; README.md
// gives the knobs with their defaults and ranges.
#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "methods/snapkv/snapkv_runtime.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"

namespace se {
namespace {

Expected<SnapKnobs> parse_knobs(const nlohmann::json& json) {
    SE_ASSIGN_OR_RETURN(Knobs knobs, Knobs::parse("snapkv", json,
                                                  {"budget", "window", "sink", "kernel", "pooling",
                                                   "decode_interval"}));
    SnapKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_ASSIGN_OR_RETURN(k.window, knobs.integer("window", k.window, 1));
    SE_ASSIGN_OR_RETURN(k.sink, knobs.integer("sink", k.sink, 0));
    SE_ASSIGN_OR_RETURN(k.kernel, knobs.integer("kernel", k.kernel, 1));
    if (k.kernel % 2 == 0) {
        return knobs.error("kernel", fmt::format("must be odd, got {}", k.kernel));
    }
    SE_ASSIGN_OR_RETURN(const std::string pooling, knobs.choice("pooling", "max", {"max", "avg"}));
    k.pooling = pooling == "max" ? PoolKind::kMax : PoolKind::kAvg;
    SE_ASSIGN_OR_RETURN(k.decode_interval,
                        knobs.integer("decode_interval", k.decode_interval, 0, 1 << 20));
    if (k.budget <= int64_t{k.sink} + k.window) {
        return knobs.error("budget",
                           fmt::format("({}) must exceed sink ({}) + window ({}): no entry would "
                                       "be selected",
                                       k.budget, k.sink, k.window));
    }
    return k;
}

Expected<Method> create_snapkv(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(const SnapKnobs k, parse_knobs(context.knobs));
    const int32_t num_layers = context.model.num_layers;
    // The whole prompt is resident until its last chunk is compacted, so a request's peak is
    // bounded only by its length: the oracle charges every token (decode re-eviction bounds the
    // decode phase, but the oracle is not told how long the prompt is).
    SE_ASSIGN_OR_RETURN(
        std::unique_ptr<EvictingCacheManager> cache,
        EvictingCacheManager::create(context, {.layer_budgets = std::vector<int32_t>(
                                                   static_cast<size_t>(num_layers), k.budget),
                                               .bounded_decode = false,
                                               .max_step_tokens = context.max_step_tokens}));
    auto runtime = std::make_unique<SnapRuntime>(k, *cache, num_layers);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"snapkv", &create_snapkv};

}  // namespace
}  // namespace se
