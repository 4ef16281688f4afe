// SnapKV: knobs, cache manager and registration. At the final prefill chunk of each sequence
// every layer scores its resident prompt entries by the attention the last `window` prompt queries
// pay them (sparse/window_scores.h) and keeps
//
//   [0, sink)  +  top (budget - sink - window) of the pooled scores over [sink, n - window)
//              +  [n - window, n)                                        (the window itself)
//
// with n the entries resident; a prompt of at most `budget` tokens is left whole. With
// decode_interval N > 0 the same rule runs again at the end of any decode step after which a
// layer holds more than budget + N entries, scored by the last `window` queries (prompt and
// decode rows) against the resident entries. The rule runs in sparse/window_eviction_runtime.h,
// every layer selecting budget - window entries (sinks included). Token-shared: one lane per
// layer. README.md gives the details, and the knobs with their defaults and ranges.
#include <fmt/core.h>

#include <memory>

#include "sparse/knobs.h"
#include "sparse/method_registry.h"
#include "sparse/window_eviction_runtime.h"

namespace se {
namespace {

struct SnapKnobs {
    int32_t budget = 2048;  // entries a layer keeps: sink + selected + window
    // w = 32: the observation window, always kept; 4 sinks, always kept; pooling kernel 7 (odd).
    WindowRule rule{.window = 32, .sink = 4, .kernel = 7, .pooling = PoolKind::kMax};
    int32_t decode_interval = 0;  // N: re-evict in decode past budget + N entries (0: never)
};

Expected<SnapKnobs> parse_knobs(const nlohmann::json& json) {
    SE_ASSIGN_OR_RETURN(Knobs knobs, Knobs::parse("snapkv", json,
                                                  {"budget", "window", "sink", "kernel", "pooling",
                                                   "decode_interval"}));
    SnapKnobs k;
    SE_ASSIGN_OR_RETURN(k.budget, knobs.integer("budget", k.budget, 1));
    SE_RETURN_IF_ERROR(parse_window_rule(knobs, k.rule));
    SE_ASSIGN_OR_RETURN(k.decode_interval,
                        knobs.integer("decode_interval", k.decode_interval, 0, 1 << 20));
    if (k.budget <= int64_t{k.rule.sink} + k.rule.window) {
        return knobs.error("budget",
                           fmt::format("({}) must exceed sink ({}) + window ({}): no entry would "
                                       "be selected",
                                       k.budget, k.rule.sink, k.rule.window));
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
    const auto layer_selection =
        std::vector<int32_t>(static_cast<size_t>(num_layers), k.budget - k.rule.window);
    auto runtime = std::make_unique<WindowEvictionRuntime>(
        WindowEvictionOptions{.rule = k.rule,
                              .decode_interval = k.decode_interval,
                              .schedule = [layer_selection](int32_t) { return layer_selection; },
                              .comm = context.comm},
        *cache, num_layers);
    return Method{.runtime = std::move(runtime), .cache = std::move(cache)};
}

const MethodRegistration kRegistration{"snapkv", &create_snapkv};

}  // namespace
}  // namespace se
