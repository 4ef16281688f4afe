// OmniKV against a naive statement of its rule (SPECS.md 2.2, PySE form): at decode, a filter
// layer f reads everything, then scores the candidates [S, L - R) with its query (per head a
// softmax over the candidates only, then the max over heads) and keeps the top `keep`; every
// target layer after it reads exactly sink + those + recent (+ the decode token). Layers up to the
// first filter, filters themselves and the wait layers after a filter read everything, as does
// every layer while L <= budget. Prefill reads everything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

#include "methods/omnikv/omnikv_layer_plan.h"
#include "methods/omnikv/omnikv_token_scores.h"
#include "support/methods/driver_session.h"

namespace se::testing {
namespace {

struct Rule {
    int32_t budget = 0;
    int32_t sink = 0;
    int32_t recent = 0;
    std::vector<int32_t> filters;
    int32_t wait = 0;
};

// The filter whose set `layer` reads, or nullopt when it reads everything.
std::optional<int32_t> source_filter(const Rule& r, int32_t layer) {
    std::optional<int32_t> source;
    for (const int32_t f : r.filters) {
        if (f < layer) source = f;
        if (f == layer) return std::nullopt;
    }
    if (source && layer - *source <= r.wait) return std::nullopt;
    return source;
}

std::vector<int32_t> all_positions(int32_t len) {
    std::vector<int32_t> p(static_cast<size_t>(len));
    std::iota(p.begin(), p.end(), 0);
    return p;
}

// The PySE set of `seq` chosen at filter layer f by its decode query q (f32 [num_heads *
// head_dim]); nullopt when the last kept and the first dropped scores nearly tie.
std::optional<std::vector<int32_t>> naive_set(const TokenHistory& h, SeqId seq, int32_t f,
                                              const float* q, const DriverOptions& o, float scale,
                                              const Rule& r) {
    const int32_t len = h.length(seq);
    if (len <= r.budget) return all_positions(len);
    const int32_t keep = r.budget - r.sink - r.recent;
    const int32_t end = len - r.recent;
    const int32_t group = o.num_heads / o.num_kv_heads;
    std::vector<double> score(static_cast<size_t>(len), 0.0);
    for (int32_t head = 0; head < o.num_heads; ++head) {
        std::vector<double> z;
        for (int32_t j = r.sink; j < end; ++j) {
            const float* k = h.key(seq, f, j, head / group);
            double dot = 0.0;
            for (int32_t i = 0; i < o.head_dim; ++i) dot += double{q[head * o.head_dim + i]} * k[i];
            z.push_back(dot * scale);
        }
        double total = 0.0;
        for (const double x : z) total += std::exp(x);
        for (int32_t j = r.sink; j < end; ++j) {
            score[j] = std::max(score[j], std::exp(z[j - r.sink]) / total);
        }
    }
    std::vector<int32_t> order(static_cast<size_t>(end - r.sink));
    std::iota(order.begin(), order.end(), r.sink);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return score[a] > score[b]; });
    if (score[order[keep - 1]] - score[order[keep]] < 1e-6 * score[order[keep]]) {
        return std::nullopt;
    }
    std::vector<int32_t> set(order.begin(), order.begin() + keep);
    for (int32_t j = 0; j < r.sink; ++j) set.push_back(j);
    for (int32_t j = end; j < len; ++j) set.push_back(j);
    set.push_back(len - 1);
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    return set;
}

// What each decode row of `step` reads: its filter's naive set, computed from the filter
// layer's query and keys, or everything.
ReadRule omnikv_rule(DriverSession& s, const SessionStep& step, const Rule& r) {
    return [&s, &step, r](SeqId seq, int32_t layer,
                          const float*) -> std::optional<std::vector<int32_t>> {
        const std::optional<int32_t> f = source_filter(r, layer);
        if (!f) return all_positions(s.history().length(seq));
        size_t row = 0;
        while (step.plan.seqs[row].seq_id != seq) ++row;
        const DriverOptions& o = s.options();
        const float* q = step.inputs[*f].q.data() + row * o.num_heads * o.head_dim;
        return naive_set(s.history(), seq, *f, q, o, s.driver().args().scale, r);
    };
}

struct Case {
    std::string name;
    int32_t num_heads;
    int32_t num_kv_heads;
    std::optional<std::vector<int32_t>> filters;  // nullopt: the default for 6 layers, {1, 3}
    int32_t wait;
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << c.name;
}

class OmniKvTest : public ::testing::TestWithParam<Case> {};

TEST_P(OmniKvTest, TargetLayersReadExactlyTheirFiltersSet) {
    const Case& c = GetParam();
    const DriverOptions o{.num_layers = 6,
                          .num_heads = c.num_heads,
                          .num_kv_heads = c.num_kv_heads,
                          .head_dim = 8,
                          .block_size = 8};
    Rule rule{.budget = 32, .sink = 3, .recent = 5, .filters = {1, 3}, .wait = c.wait};
    nlohmann::json knobs = {{"budget", rule.budget},
                            {"sink", rule.sink},
                            {"recent", rule.recent},
                            {"num_wait_load_layers", c.wait}};
    if (c.filters) {
        knobs["filter_layers"] = *c.filters;
        rule.filters = *c.filters;
    }
    DriverSession s("omnikv", knobs, o);
    // Ragged prompts, none a multiple of the block, chunks of 13: the second one turns sparse
    // during decode (L > 32).
    const std::vector<SeqId> ids = {1, 2, 3};
    for (const auto& step : s.prefill(ids, {53, 29, 70}, 13)) s.expect_causal_reads(step);
    int32_t skipped = 0;
    for (int32_t i = 0; i < 20; ++i) {
        const SessionStep step = s.decode(ids);
        skipped += s.expect_decode_reads(step, omnikv_rule(s, step, rule));
    }
    EXPECT_LE(skipped, 3) << "too many near ties to trust the comparison";
    // Nothing is evicted: the pool holds every token's block and gives all back on release.
    CacheManager& cache = *s.driver().method().cache;
    int64_t blocks = 0;
    for (const SeqId id : ids) {
        blocks += (s.history().length(id) + o.block_size - 1) / o.block_size;
    }
    EXPECT_EQ(cache.capacity().num_blocks - cache.capacity().num_free_blocks, blocks);
    for (const SeqId id : ids) cache.release(id);
    EXPECT_EQ(cache.capacity().num_free_blocks, cache.capacity().num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Gqa, OmniKvTest,
                         ::testing::Values(Case{"G1DefaultFilters", 2, 2, std::nullopt, 0},
                                           Case{"G4FiltersAt0And2Wait1", 8, 2,
                                                std::vector<int32_t>{0, 2}, 1},
                                           Case{"G8OneFilter", 8, 1, std::vector<int32_t>{2}, 0}),
                         [](const auto& info) { return info.param.name; });

TEST(OmniKvDenseTest, ABudgetCoveringTheContextComputesWhatDenseComputes) {
    const DriverOptions o{
        .num_layers = 4, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8, .block_size = 8};
    // Filter 1 serves layers 2 and 3. With budget 30 the sequences stay dense up to 30 entries.
    for (const int32_t budget : {4096, 30}) {
        const nlohmann::json knobs = {
            {"budget", budget}, {"sink", 2}, {"recent", 4}, {"filter_layers", {1}}};
        DriverSession omni("omnikv", knobs, o);
        DriverSession dense("dense", nlohmann::json::object(), o);
        const std::vector<SeqId> ids = {1, 2};
        const auto a = omni.prefill(ids, {26, 11}, 7);
        const auto b = dense.prefill(ids, {26, 11}, 7);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].outs, b[i].outs);
        const int32_t qw = o.num_heads * o.head_dim;
        for (int32_t step = 0; step < 5; ++step) {
            const auto x = omni.decode(ids).outs;
            const auto y = dense.decode(ids).outs;
            const bool covered = budget == 4096 || 26 + step + 1 <= budget;
            // Layers 0 and 1 read everything through the same kernel as dense.
            EXPECT_EQ(x[0], y[0]);
            EXPECT_EQ(x[1], y[1]);
            for (int32_t l = 2; l < 4; ++l) {
                double worst = 0.0;
                for (int32_t i = 0; i < qw; ++i)
                    worst = std::max(worst, double{std::fabs(x[l][i] - y[l][i])});
                if (covered) {
                    EXPECT_LE(worst, 1e-5) << "budget " << budget << " step " << step;
                } else {
                    EXPECT_GT(worst, 1e-4) << "31 entries, budget 30: layer " << l << " is sparse";
                }
            }
        }
    }
}

TEST(OmniKvScoresTest, SoftmaxOverTheCandidatesThenTheHeadMax) {
    std::mt19937_64 rng(3);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    const int32_t heads = 4;
    const int32_t visible = 37;
    std::vector<float> logits(static_cast<size_t>(heads * visible));
    for (float& x : logits) x = normal(rng);
    std::vector<float> got;
    candidate_scores(logits, heads, visible, 5, 30, got);
    ASSERT_EQ(got.size(), 25u);
    for (int32_t j = 5; j < 30; ++j) {
        double want = 0.0;
        for (int32_t h = 0; h < heads; ++h) {
            double total = 0.0;
            for (int32_t i = 5; i < 30; ++i) total += std::exp(double{logits[h * visible + i]});
            want = std::max(want, std::exp(double{logits[h * visible + j]}) / total);
        }
        EXPECT_NEAR(got[j - 5], want, 1e-6 * want) << "entry " << j;
    }
}

TEST(OmniKvLayerPlanTest, DefaultFiltersScaleTheLlama3Profile) {
    EXPECT_EQ(default_filter_layers(32), (std::vector<int32_t>{2, 8, 18}));
    EXPECT_EQ(default_filter_layers(28), (std::vector<int32_t>{1, 7, 15}));
    EXPECT_EQ(default_filter_layers(6), (std::vector<int32_t>{1, 3}));
    EXPECT_EQ(default_filter_layers(3), (std::vector<int32_t>{1}));
    EXPECT_EQ(default_filter_layers(2), (std::vector<int32_t>{0}));
    EXPECT_TRUE(default_filter_layers(1).empty());
}

TEST(OmniKvLayerPlanTest, RolesFollowTheFilters) {
    using R = OmniKvRole;
    const std::vector<int32_t> filters = {0, 2};
    const OmniKvLayerPlan plan = plan_layers(6, filters, 1);
    std::vector<R> roles;
    for (const OmniKvLayer& l : plan.layers) roles.push_back(l.role);
    EXPECT_EQ(roles, (std::vector<R>{R::kFilter, R::kDense, R::kFilter, R::kDense, R::kTarget,
                                     R::kTarget}));
    EXPECT_EQ(plan.layers[4].filter, 2);
    EXPECT_EQ(plan.layers[5].filter, 2);
    EXPECT_FALSE(plan.feeds_targets(0));  // its only follower waits
    EXPECT_TRUE(plan.feeds_targets(2));
    EXPECT_EQ(plan.num_targets(), 2);
}

TEST(OmniKvKnobsTest, ErrorsNameTheKnob) {
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {{{"budget", 0}}, "'budget'"},
        {{{"budget", "many"}}, "'budget'"},
        {{{"budget", 8}, {"sink", 3}, {"recent", 5}}, "'budget'"},
        {{{"sink", -1}}, "'sink'"},
        {{{"recent", "x"}}, "'recent'"},
        {{{"filter_layers", {4}}}, "'filter_layers'"},     // 4 layers: out of range
        {{{"filter_layers", {2, 1}}}, "'filter_layers'"},  // not ascending
        {{{"filter_layers", nlohmann::json::array()}}, "'filter_layers'"},  // nothing sparse
        {{{"filter_layers", {3}}}, "'filter_layers'"},  // the last layer serves nobody
        {{{"filter_layers", {1}}, {"num_wait_load_layers", 2}}, "'filter_layers'"},
        {{{"num_wait_load_layers", -1}}, "'num_wait_load_layers'"},
        {{{"keep", 16}}, "'keep'"},
    };
    for (const auto& [knobs, name] : cases) {
        auto d = ContractDriver::create("omnikv", knobs);
        ASSERT_FALSE(d.ok()) << knobs.dump();
        EXPECT_NE(d.status().message().find(name), std::string::npos) << d.status().to_string();
    }
}

}  // namespace
}  // namespace se::testing
