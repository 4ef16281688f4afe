// H2O against a naive statement of its rule (SPECS.md 3.4): the accumulated attention mass is the
// column sum of the causal softmax over every query row and head; after each step a layer over
// budget (+ interval - 1) keeps the `recent` newest entries plus the older ones with the most
// mass; reads are exact over what is kept; evicted entries give their blocks back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sparse/evicting_cache_manager.h"
#include "support/methods/contract_driver.h"
#include "support/methods/step_plans.h"
#include "support/methods/token_recorder.h"

namespace se::testing {
namespace {

std::unique_ptr<ContractDriver> driver(const nlohmann::json& knobs, DriverOptions options) {
    return make_driver("h2o", knobs, options);
}

struct Shape {
    int32_t num_heads;
    int32_t num_kv_heads;
};

std::string shape_name(const Shape& s) {
    return "G" + std::to_string(s.num_heads / s.num_kv_heads) + "_kv" +
           std::to_string(s.num_kv_heads);
}

class H2oMassTest : public ::testing::TestWithParam<Shape> {};

// Before any eviction (budget above the context) the mass is the column sums of the dense causal
// softmax over every query row and head, through a multi-chunk ragged prefill and decode.
TEST_P(H2oMassTest, AccumulatedMassIsTheColumnSumOfDenseProbabilities) {
    const DriverOptions options{.num_layers = 2,
                                .num_heads = GetParam().num_heads,
                                .num_kv_heads = GetParam().num_kv_heads,
                                .head_dim = 8,
                                .block_size = 5};
    auto d = driver({{"budget", 1000}}, options);
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d->method().cache);
    const std::vector<int32_t> prompts = {45, 29};
    Recorder rec(*d, 2);
    const std::vector<StepPlan> plans = prefill_then_decode(prompts, 16, 3);
    uint64_t seed = 7;
    std::vector<int32_t> done = {0, 0};
    std::vector<double> probs;
    for (const StepPlan& plan : plans) {
        rec.run(plan, d->random_inputs(plan.num_tokens(), seed++));
        for (const StepSeq& s : plan.seqs) done[s.seq_id - 1] += s.num_new_tokens;
        for (SeqId seq : {1, 2}) {
            const int32_t len = done[seq - 1];
            for (int32_t l = 0; l < options.num_layers; ++l) {
                std::vector<double> want(static_cast<size_t>(len), 0.0);
                for (int32_t p = 0; p < len; ++p) {
                    std::vector<int32_t> visible(static_cast<size_t>(p + 1));
                    for (int32_t j = 0; j <= p; ++j) visible[j] = j;
                    for (int32_t h = 0; h < options.num_heads; ++h) {
                        attend(rec.history(seq), l, d->args(), p, h, visible, probs);
                        for (int32_t j = 0; j <= p; ++j) want[j] += probs[j];
                    }
                }
                const auto got = cache.entry_scores(seq, cache.lane(l));
                ASSERT_EQ(got.size(), want.size());
                for (int32_t j = 0; j < len; ++j) {
                    EXPECT_NEAR(got[j], want[j], 1e-5 * std::max(1.0, want[j]))
                        << "seq " << seq << " layer " << l << " entry " << j;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Gqa, H2oMassTest, ::testing::Values(Shape{2, 2}, Shape{8, 2}, Shape{8, 1}),
                         [](const auto& info) { return shape_name(info.param); });

struct RuleCase {
    Shape shape;
    double recent_ratio;
    int32_t evict_interval;
};

// The rule on the naive side: the `recent` newest of `read` plus the budget - recent older ones
// with the most mass (ties to the lower position), ascending. Sets *near_tie when the last kept
// and the first dropped differ by less than the method's f32 scores can resolve.
std::vector<int32_t> naive_keep(const std::vector<int32_t>& read,
                                const std::map<int32_t, double>& mass, int32_t budget,
                                int32_t recent, bool* near_tie) {
    std::vector<int32_t> older(read.begin(), read.end() - recent);
    std::stable_sort(older.begin(), older.end(),
                     [&](int32_t a, int32_t b) { return mass.at(a) > mass.at(b); });
    const auto heavy = static_cast<size_t>(budget - recent);
    if (heavy > 0 && heavy < older.size()) {
        const double last = mass.at(older[heavy - 1]);
        *near_tie = last - mass.at(older[heavy]) < 1e-5 * std::max(1.0, last);
    }
    std::vector<int32_t> keep(older.begin(), older.begin() + static_cast<int64_t>(heavy));
    keep.insert(keep.end(), read.end() - recent, read.end());
    std::sort(keep.begin(), keep.end());
    return keep;
}

class H2oRuleTest : public ::testing::TestWithParam<RuleCase> {};

// The naive rule run alongside the method: per (sequence, layer) the kept positions and their
// mass (double). Each step's rows read the kept entries plus the step's own (causal); their
// outputs must be softmax attention over exactly those entries.
TEST_P(H2oRuleTest, KeepsRecentAndHeavyHittersAndReadsExactlyThem) {
    const RuleCase rc = GetParam();
    const int32_t budget = 24;
    const int32_t recent = static_cast<int32_t>(std::lround(rc.recent_ratio * budget));
    const int32_t limit = budget + rc.evict_interval - 1;
    const DriverOptions options{.num_layers = 2,
                                .num_heads = rc.shape.num_heads,
                                .num_kv_heads = rc.shape.num_kv_heads,
                                .head_dim = 8,
                                .block_size = 5};
    const int32_t bs = options.block_size;
    auto d = driver({{"budget", budget},
                     {"recent_ratio", rc.recent_ratio},
                     {"evict_interval", rc.evict_interval}},
                    options);
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d->method().cache);
    const std::vector<int32_t> prompts = {41, 13, 30};
    const auto num_seqs = static_cast<int32_t>(prompts.size());
    Recorder rec(*d, num_seqs);
    const std::vector<StepPlan> plans = prefill_then_decode(prompts, 16, 20);
    // kept[seq][layer] = positions; mass[seq][layer][position]
    std::vector<std::vector<std::vector<int32_t>>> kept(
        static_cast<size_t>(num_seqs), std::vector<std::vector<int32_t>>(options.num_layers));
    std::vector<std::vector<std::map<int32_t, double>>> mass(
        static_cast<size_t>(num_seqs), std::vector<std::map<int32_t, double>>(options.num_layers));
    const int32_t qw = options.num_heads * options.head_dim;
    int32_t num_ties = 0;
    int32_t num_evictions = 0;
    uint64_t seed = 11;
    std::vector<double> probs;
    for (const StepPlan& plan : plans) {
        const auto outs = rec.run(plan, d->random_inputs(plan.num_tokens(), seed++));
        int32_t row = 0;
        for (const StepSeq& s : plan.seqs) {
            const auto i = static_cast<size_t>(s.seq_id - 1);
            for (int32_t l = 0; l < options.num_layers; ++l) {
                std::vector<int32_t> read = kept[i][l];
                for (int32_t t = 0; t < s.num_new_tokens; ++t) {
                    const int32_t p = s.num_computed_tokens + t;
                    read.push_back(p);
                    mass[i][l][p] = 0.0;
                    for (int32_t h = 0; h < options.num_heads; ++h) {
                        const auto want =
                            attend(rec.history(s.seq_id), l, d->args(), p, h, read, probs);
                        for (size_t j = 0; j < read.size(); ++j) mass[i][l][read[j]] += probs[j];
                        for (int32_t x = 0; x < options.head_dim; ++x) {
                            ASSERT_NEAR(outs[l][(row + t) * qw + h * options.head_dim + x], want[x],
                                        1e-5);
                        }
                    }
                }
                kept[i][l] = read;
                auto n = static_cast<int32_t>(read.size());
                if (n > limit) {
                    bool near_tie = false;
                    kept[i][l] = naive_keep(read, mass[i][l], budget, recent, &near_tie);
                    num_ties += near_tie ? 1 : 0;
                    ++num_evictions;
                }
                const auto pos = cache.entry_positions(s.seq_id, cache.lane(l));
                const std::vector<int32_t> got(pos.begin(), pos.end());
                if (num_ties == 0) {
                    ASSERT_EQ(got, kept[i][l])
                        << "seq " << s.seq_id << " layer " << l << " after "
                        << s.num_computed_tokens + s.num_new_tokens << " tokens";
                }
                kept[i][l] = got;  // a near-tie may go either way; follow the method from here
                EXPECT_EQ(
                    static_cast<int32_t>(cache.kv().block_table(s.seq_id, cache.lane(l)).size()),
                    (static_cast<int32_t>(got.size()) + bs - 1) / bs)
                    << "blocks not freed";
                EXPECT_LE(static_cast<int32_t>(got.size()), limit);
            }
            row += s.num_new_tokens;
        }
    }
    EXPECT_EQ(num_ties, 0) << "the seeds should give no near-ties";
    EXPECT_GT(num_evictions, 20);
    // Pool usage equals what is retained: ceil(entries / block) per lane.
    int64_t blocks = 0;
    for (int32_t i = 0; i < num_seqs; ++i) {
        for (int32_t l = 0; l < options.num_layers; ++l) {
            blocks += (static_cast<int64_t>(kept[i][l].size()) + bs - 1) / bs;
        }
    }
    EXPECT_EQ(cache.capacity().num_blocks - cache.capacity().num_free_blocks, blocks);
    for (SeqId s = 1; s <= num_seqs; ++s) cache.release(s);
    EXPECT_EQ(cache.capacity().num_free_blocks, cache.capacity().num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Gqa, H2oRuleTest,
                         ::testing::Values(RuleCase{{2, 2}, 0.5, 1}, RuleCase{{8, 2}, 0.3, 1},
                                           RuleCase{{8, 1}, 0.5, 3}),
                         [](const auto& info) {
                             return shape_name(info.param.shape) + "_interval" +
                                    std::to_string(info.param.evict_interval);
                         });

// One head, six tokens: every query points at token 2's key, so token 2 collects almost all the
// mass and survives while the more recent token 3 (no mass) is evicted. Token 0 keeps the whole
// first row and half the second.
TEST(H2oHandTest, ATokenWithALargeColumnSumSurvives) {
    const DriverOptions options{
        .num_layers = 1, .num_heads = 1, .num_kv_heads = 1, .head_dim = 4, .block_size = 4};
    auto d = driver({{"budget", 4}}, options);  // recent 2, heavy 2
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d->method().cache);
    auto inputs = [](int32_t n, int32_t heavy_row) {
        std::vector<LayerInputs> in(1);
        in[0].q.assign(static_cast<size_t>(n * 4), 0.0f);
        in[0].k.assign(static_cast<size_t>(n * 4), 0.0f);
        in[0].v.assign(static_cast<size_t>(n * 4), 1.0f);
        for (int32_t t = 0; t < n; ++t) in[0].q[t * 4] = 20.0f;
        if (heavy_row >= 0) in[0].k[heavy_row * 4] = 1.0f;
        return in;
    };
    d->step(
        {.phase = StepPhase::kPrefill,
         .seqs = {{.seq_id = 1, .num_new_tokens = 6, .num_computed_tokens = 0, .samples = true}}},
        inputs(6, 2));
    auto pos = cache.entry_positions(1, 0);
    EXPECT_EQ(std::vector<int32_t>(pos.begin(), pos.end()), (std::vector<int32_t>{0, 2, 4, 5}));
    auto acc = cache.entry_scores(1, 0);
    EXPECT_NEAR(acc[0], 1.5, 1e-3);  // rows 0 and 1
    EXPECT_NEAR(acc[1], 4.0, 1e-3);  // token 2: rows 2..5
    // A decode step over five entries: of the three older ones (0, 2, 4) the two heavy survive.
    d->step(
        {.phase = StepPhase::kDecode,
         .seqs = {{.seq_id = 1, .num_new_tokens = 1, .num_computed_tokens = 6, .samples = true}}},
        inputs(1, -1));
    pos = cache.entry_positions(1, 0);
    EXPECT_EQ(std::vector<int32_t>(pos.begin(), pos.end()), (std::vector<int32_t>{0, 2, 5, 6}));
}

TEST(H2oKnobsTest, ErrorsNameTheKnob) {
    for (const auto& [knobs, name] : std::vector<std::pair<nlohmann::json, std::string>>{
             {{{"budget", 0}}, "'budget'"},
             {{{"recent_ratio", 1.5}}, "'recent_ratio'"},
             {{{"recent_ratio", "half"}}, "'recent_ratio'"},
             {{{"evict_interval", 0}}, "'evict_interval'"},
             {{{"window", 8}}, "window"}}) {
        auto d = ContractDriver::create("h2o", knobs);
        ASSERT_FALSE(d.ok()) << knobs.dump();
        EXPECT_NE(d.status().message().find(name), std::string::npos) << d.status().to_string();
    }
}

}  // namespace
}  // namespace se::testing
