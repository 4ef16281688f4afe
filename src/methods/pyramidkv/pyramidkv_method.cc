// PyramidKV: knobs, cache manager and registration. The rule is in pyramidkv_runtime.h and the
// per-layer budgets in pyramid_schedule.h; README.md gives the knobs with defaults and ranges.
#include <fmt/core.h>

#include <limits>
#include <memory>

#include "methods/pyramidkv/pyramidkv_runtime.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"

namespace se {
namespace {

Expected<PyramidKnobs> parse_knobs(const nlohmann::json& json) {
    SE_ASSIGN_OR_RETURN(
        Knobs knobs,
        Knobs::parse("pyramidkv", json, {"budget", "window", "sink", "kernel", "pooling", "beta"}));
    PyramidKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_ASSIGN_OR_RETURN(k.window, knobs.integer("window", k.window, 1));
    SE_ASSIGN_OR_RETURN(k.sink, knobs.integer("sink", k.sink, 0));
    SE_ASSIGN_OR_RETURN(k.kernel, knobs.integer("kernel", k.kernel, 1));
    if (k.kernel % 2 == 0) {
        return knobs.error("kernel", fmt::format("must be odd, got {}", k.kernel));
    }
    SE_ASSIGN_OR_RETURN(const std::string pooling, knobs.choice("pooling", "max", {"max", "avg"}));
    k.pooling = pooling == "max" ? PoolKind::kMax : PoolKind::kAvg;
    SE_ASSIGN_OR_RETURN(k.beta, knobs.integer("beta", k.beta, 1));
    if (k.budget <= k.window) {
        return knobs.error("budget", fmt::format("({}) must exceed window ({}): no entry would be "
                                                 "selected",
                                                 k.budget, k.window));
    }
    // The thinnest layer selects at least b / beta entries; the sink must fit in every layer.
    const int32_t thinnest = (k.budget - k.window) / k.beta;
    if (k.sink > thinnest) {
        return knobs.error("sink",
                           fmt::format("({}) must not exceed (budget - window) / beta = {}, "
                                       "what the last layer may select",
                                       k.sink, thinnest));
    }
    return k;
}

Expected<Method> create_pyramidkv(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(const PyramidKnobs k, parse_knobs(context.knobs));
    const int32_t num_layers = context.model.num_layers;
    // The oracle's layer budgets: the schedule of a long prompt (the pure pyramid), window added.
    // Decode grows past them (no decode eviction), so the oracle does not bound decode.
    std::vector<int32_t> budgets = pyramid_selection(
        {.budget = k.budget, .window = k.window, .beta = k.beta, .num_layers = num_layers},
        std::numeric_limits<int32_t>::max());
    for (int32_t& b : budgets) b += k.window;
    SE_ASSIGN_OR_RETURN(
        std::unique_ptr<EvictingCacheManager> cache,
        EvictingCacheManager::create(context, {.layer_budgets = std::move(budgets),
                                               .bounded_decode = false,
                                               .max_step_tokens = context.max_step_tokens}));
    auto runtime = std::make_unique<PyramidRuntime>(k, *cache, num_layers);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"pyramidkv", &create_pyramidkv};

}  // namespace
}  // namespace se
