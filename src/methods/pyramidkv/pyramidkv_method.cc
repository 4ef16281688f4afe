// PyramidKV: knobs, cache manager and registration. SnapKV's observation-window scoring with a
// budget per layer: at the final prefill chunk of each sequence, layer l of a prompt of L tokens
// keeps
//
//   [0, sink)  +  top (selected_l - sink) of the pooled window scores over [sink, L - window)
//              +  [L - window, L)
//
// where selected_l comes from pyramid_schedule.h (nothing is evicted when the schedule leaves the
// prompt whole or a layer's share covers it). Decode appends without further eviction. The rule
// runs in sparse/window_eviction_runtime.h. Token-shared: one lane per layer. README.md gives the
// details, and the knobs with defaults and ranges.
#include <fmt/core.h>

#include <limits>
#include <memory>

#include "methods/pyramidkv/pyramid_schedule.h"
#include "sparse/knobs.h"
#include "sparse/method_registry.h"
#include "sparse/window_eviction_runtime.h"

namespace se {
namespace {

struct PyramidKnobs {
    int32_t budget = 2048;  // B: entries a layer keeps on average, window included
    // w = 8: the observation window, always kept; no sinks (the first entries, always kept, part
    // of each layer's selection); pooling kernel 7 (odd).
    WindowRule rule{.window = 8, .sink = 0, .kernel = 7, .pooling = PoolKind::kMax};
    int32_t beta = 20;  // the pyramid's steepness
};

Expected<PyramidKnobs> parse_knobs(const nlohmann::json& json) {
    SE_ASSIGN_OR_RETURN(
        Knobs knobs,
        Knobs::parse("pyramidkv", json, {"budget", "window", "sink", "kernel", "pooling", "beta"}));
    PyramidKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_RETURN_IF_ERROR(parse_window_rule(knobs, k.rule));
    SE_ASSIGN_OR_RETURN(k.beta, knobs.integer("beta", k.beta, 1));
    if (k.budget <= k.rule.window) {
        return knobs.error("budget", fmt::format("({}) must exceed window ({}): no entry would be "
                                                 "selected",
                                                 k.budget, k.rule.window));
    }
    // The thinnest layer selects at least b / beta entries; the sink must fit in every layer.
    const int32_t thinnest = (k.budget - k.rule.window) / k.beta;
    if (k.rule.sink > thinnest) {
        return knobs.error("sink",
                           fmt::format("({}) must not exceed (budget - window) / beta = {}, "
                                       "what the last layer may select",
                                       k.rule.sink, thinnest));
    }
    return k;
}

Expected<Method> create_pyramidkv(const MethodContext& context) {
    SE_ASSIGN_OR_RETURN(const PyramidKnobs k, parse_knobs(context.knobs));
    const int32_t num_layers = context.model.num_layers;
    // The oracle's layer budgets: the schedule of a long prompt (the pure pyramid), window added.
    // Decode grows past them (no decode eviction), so the oracle does not bound decode.
    const PyramidShape shape{
        .budget = k.budget, .window = k.rule.window, .beta = k.beta, .num_layers = num_layers};
    std::vector<int32_t> budgets = pyramid_selection(shape, std::numeric_limits<int32_t>::max());
    for (int32_t& b : budgets) b += k.rule.window;
    SE_ASSIGN_OR_RETURN(
        std::unique_ptr<EvictingCacheManager> cache,
        EvictingCacheManager::create(context, {.layer_budgets = std::move(budgets),
                                               .bounded_decode = false,
                                               .max_step_tokens = context.max_step_tokens}));
    auto runtime = std::make_unique<WindowEvictionRuntime>(
        WindowEvictionOptions{
            .rule = k.rule,
            .schedule = [shape](int32_t len) { return pyramid_selection(shape, len); },
            .comm = context.comm},
        *cache, num_layers);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"pyramidkv", &create_pyramidkv};

}  // namespace
}  // namespace se
