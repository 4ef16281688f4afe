// Ada-SnapKV against a naive statement of its rule (SPECS.md 3.3): at the end of each prompt every
// KV head's prompt entries are scored by the observation window (softmax mean over the window's
// rows and the group's heads, max-pooled), the layer's budget is split across heads by a global
// top-k with a floor, and each head keeps its share plus the window; reads are exact over each
// head's kept entries; evicted entries give their blocks back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sparse/evicting_cache_manager.h"
#include "support/methods/contract_driver.h"
#include "support/methods/step_plans.h"
#include "support/methods/token_recorder.h"

namespace se::testing {
namespace {

std::unique_ptr<ContractDriver> driver(const nlohmann::json& knobs, DriverOptions options) {
    return make_driver("adakv", knobs, options);
}

std::vector<int32_t> iota(int32_t from, int32_t to) {
    std::vector<int32_t> v(static_cast<size_t>(std::max(0, to - from)));
    std::iota(v.begin(), v.end(), from);
    return v;
}

// KV head g's score of prompt positions [0, len - w): the mean over the window's rows and the
// group's query heads of the causal softmax, then a max over the kernel's neighbourhood.
std::vector<double> naive_scores(const History& hist, int32_t layer, const AttentionArgs& a,
                                 int32_t len, int32_t w, int32_t g, int32_t kernel) {
    const int32_t group = a.num_heads / a.num_kv_heads;
    const int32_t scored = len - w;
    std::vector<double> mean(static_cast<size_t>(scored), 0.0);
    std::vector<double> probs;
    for (int32_t i = len - w; i < len; ++i) {
        for (int32_t h = g * group; h < (g + 1) * group; ++h) {
            attend(hist, layer, a, i, h, iota(0, i + 1), probs);
            for (int32_t j = 0; j < scored; ++j) mean[j] += probs[j] / (w * group);
        }
    }
    std::vector<double> pooled(mean.size());
    for (int32_t j = 0; j < scored; ++j) {
        pooled[j] = -INFINITY;
        for (int32_t t = std::max(0, j - kernel / 2); t <= std::min(scored - 1, j + kernel / 2);
             ++t) {
            pooled[j] = std::max(pooled[j], mean[t]);
        }
    }
    return pooled;
}

// Indices of `scores` by descending score, ties to the lower index. Sets *near_tie when the
// k-th and (k+1)-th differ by less than the two implementations' rounding could.
std::vector<int32_t> ranked(const std::vector<double>& scores, size_t k, bool* near_tie) {
    std::vector<int32_t> order = iota(0, static_cast<int32_t>(scores.size()));
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t x, int32_t y) { return scores[x] > scores[y]; });
    if (k > 0 && k < order.size()) {
        const double gap = scores[order[k - 1]] - scores[order[k]];
        if (gap > 0.0 && gap < 1e-6 * std::fabs(scores[order[k - 1]])) *near_tie = true;
    }
    order.resize(std::min(k, order.size()));
    return order;
}

double round_half_even(double x) {
    const double f = std::floor(x);
    if (x - f != 0.5) return std::floor(x + 0.5);
    return std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

struct NaiveKeep {
    std::vector<std::vector<int32_t>> kept;  // [kv head] ascending positions
    std::vector<int32_t> caps;               // [kv head]
    bool near_tie = false;
};

// The rule for one (sequence, layer) with a prompt of len > budget tokens.
NaiveKeep naive_keep(const History& hist, int32_t layer, const AttentionArgs& a, int32_t len,
                     int32_t budget, int32_t w, int32_t kernel, double alpha) {
    NaiveKeep out;
    const int32_t scored = len - w;
    const int32_t base = budget - w;
    std::vector<std::vector<double>> scores;
    std::vector<double> all;  // head-major concatenation
    for (int32_t g = 0; g < a.num_kv_heads; ++g) {
        scores.push_back(naive_scores(hist, layer, a, len, w, g, kernel));
        all.insert(all.end(), scores.back().begin(), scores.back().end());
    }
    std::vector<int32_t> counts(static_cast<size_t>(a.num_kv_heads), 0);
    for (int32_t i : ranked(all, static_cast<size_t>(a.num_kv_heads) * base, &out.near_tie)) {
        ++counts[i / scored];
    }
    const double floor = std::floor(alpha * base);
    for (int32_t g = 0; g < a.num_kv_heads; ++g) {
        const auto cap = static_cast<int32_t>(round_half_even((1.0 - alpha) * counts[g] + floor));
        std::vector<int32_t> keep = ranked(scores[g], static_cast<size_t>(cap), &out.near_tie);
        for (int32_t p = scored; p < len; ++p) keep.push_back(p);
        std::sort(keep.begin(), keep.end());
        out.kept.push_back(keep);
        out.caps.push_back(cap);
    }
    return out;
}

struct RuleCase {
    int32_t num_heads;
    int32_t num_kv_heads;
    double alpha;
    int32_t kernel;
};

class AdaRuleTest : public ::testing::TestWithParam<RuleCase> {};

// The naive rule alongside the method: per (sequence, layer, KV head) the kept positions. Every
// step's rows must read exactly their head's kept entries plus the step's own (causal).
TEST_P(AdaRuleTest, KeepsEachHeadsShareAndReadsExactlyIt) {
    const RuleCase rc = GetParam();
    const int32_t budget = 20;
    const int32_t window = 6;
    const DriverOptions options{.num_layers = 2,
                                .num_heads = rc.num_heads,
                                .num_kv_heads = rc.num_kv_heads,
                                .head_dim = 8,
                                .block_size = 5};
    const int32_t bs = options.block_size;
    const int32_t num_kv = options.num_kv_heads;
    const int32_t group = options.num_heads / num_kv;
    auto d =
        driver({{"budget", budget}, {"window", window}, {"kernel", rc.kernel}, {"alpha", rc.alpha}},
               options);
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d->method().cache);
    // 35 tokens in chunks of 16 put the window across the last two chunks; 17 stays whole.
    const std::vector<int32_t> prompts = {43, 35, 17};
    const auto num_seqs = static_cast<int32_t>(prompts.size());
    Recorder rec(*d, num_seqs);
    const int32_t decode_steps = 8;
    const std::vector<StepPlan> plans = prefill_then_decode(prompts, 16, decode_steps);
    // kept[seq][layer][kv head] = positions
    std::vector<std::vector<std::vector<std::vector<int32_t>>>> kept(
        static_cast<size_t>(num_seqs),
        std::vector<std::vector<std::vector<int32_t>>>(
            options.num_layers, std::vector<std::vector<int32_t>>(static_cast<size_t>(num_kv))));
    const int32_t qw = options.num_heads * options.head_dim;
    int32_t num_compared = 0;
    uint64_t seed = 21;
    std::vector<double> probs;
    for (const StepPlan& plan : plans) {
        const auto outs = rec.run(plan, d->random_inputs(plan.num_tokens(), seed++));
        int32_t row = 0;
        for (const StepSeq& s : plan.seqs) {
            const auto i = static_cast<size_t>(s.seq_id - 1);
            const int32_t len = s.num_computed_tokens + s.num_new_tokens;
            for (int32_t l = 0; l < options.num_layers; ++l) {
                for (int32_t g = 0; g < num_kv; ++g) {
                    std::vector<int32_t>& read = kept[i][l][g];
                    for (int32_t t = 0; t < s.num_new_tokens; ++t) {
                        read.push_back(s.num_computed_tokens + t);
                        for (int32_t h = g * group; h < (g + 1) * group; ++h) {
                            const auto want = attend(rec.history(s.seq_id), l, d->args(),
                                                     s.num_computed_tokens + t, h, read, probs);
                            for (int32_t x = 0; x < options.head_dim; ++x) {
                                ASSERT_NEAR(outs[l][(row + t) * qw + h * options.head_dim + x],
                                            want[x], 1e-5);
                            }
                        }
                    }
                }
                if (plan.phase == StepPhase::kPrefill && s.samples && len > budget) {
                    const NaiveKeep naive = naive_keep(rec.history(s.seq_id), l, d->args(), len,
                                                       budget, window, rc.kernel, rc.alpha);
                    for (int32_t g = 0; g < num_kv; ++g) {
                        const auto pos = cache.entry_positions(s.seq_id, cache.lane(l, g));
                        const std::vector<int32_t> got(pos.begin(), pos.end());
                        if (!naive.near_tie) {
                            EXPECT_EQ(got, naive.kept[g])
                                << "seq " << s.seq_id << " layer " << l << " head " << g;
                        }
                        kept[i][l][g] = got;
                    }
                    num_compared += naive.near_tie ? 0 : 1;
                }
                for (int32_t g = 0; g < num_kv; ++g) {
                    const int32_t lane = cache.lane(l, g);
                    const auto n = static_cast<int32_t>(kept[i][l][g].size());
                    ASSERT_EQ(cache.kv().num_entries(s.seq_id, lane), n);
                    EXPECT_EQ(static_cast<int32_t>(cache.kv().block_table(s.seq_id, lane).size()),
                              (n + bs - 1) / bs)
                        << "blocks not freed";
                }
            }
            row += s.num_new_tokens;
        }
    }
    EXPECT_EQ(num_compared, 2 * options.num_layers) << "near-ties should be rare";
    // The short prompt kept everything; pool usage equals what is retained, per lane.
    int64_t blocks = 0;
    for (int32_t i = 0; i < num_seqs; ++i) {
        for (int32_t l = 0; l < options.num_layers; ++l) {
            for (int32_t g = 0; g < num_kv; ++g) {
                if (i == 2) {
                    EXPECT_EQ(kept[i][l][g], iota(0, prompts[i] + decode_steps));
                }
                blocks += (static_cast<int64_t>(kept[i][l][g].size()) + bs - 1) / bs;
            }
        }
    }
    EXPECT_EQ(cache.capacity().num_blocks - cache.capacity().num_free_blocks, blocks);
    for (SeqId s = 1; s <= num_seqs; ++s) cache.release(s);
    EXPECT_EQ(cache.capacity().num_free_blocks, cache.capacity().num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Gqa, AdaRuleTest,
                         ::testing::Values(RuleCase{2, 2, 0.2, 7}, RuleCase{8, 2, 0.2, 7},
                                           RuleCase{8, 1, 0.2, 7}, RuleCase{8, 4, 0.5, 3},
                                           RuleCase{8, 2, 1.0, 5}),
                         [](const auto& info) {
                             const RuleCase& c = info.param;
                             return "G" + std::to_string(c.num_heads / c.num_kv_heads) + "_kv" +
                                    std::to_string(c.num_kv_heads) + "_alpha" +
                                    std::to_string(static_cast<int>(c.alpha * 10)) + "_k" +
                                    std::to_string(c.kernel);
                         });

// One prompt's final chunk compacts every (layer, KV head) lane; returns the entries per lane.
std::vector<std::vector<int32_t>> compact_one(ContractDriver& d, int32_t len, uint64_t seed,
                                              const std::vector<float>& group_scale) {
    auto inputs = d.random_inputs(len, seed);
    const int32_t group_width = d.args().num_heads / d.args().num_kv_heads * d.args().head_dim;
    for (LayerInputs& in : inputs) {
        for (size_t x = 0; x < in.q.size(); ++x) {
            const size_t col = x % static_cast<size_t>(d.args().num_heads * d.args().head_dim);
            in.q[x] *= group_scale[col / group_width];
        }
    }
    d.step(
        {.phase = StepPhase::kPrefill,
         .seqs = {{.seq_id = 1, .num_new_tokens = len, .num_computed_tokens = 0, .samples = true}}},
        inputs);
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d.method().cache);
    std::vector<std::vector<int32_t>> sizes(static_cast<size_t>(d.config().num_layers));
    for (int32_t l = 0; l < d.config().num_layers; ++l) {
        for (int32_t g = 0; g < d.args().num_kv_heads; ++g) {
            sizes[l].push_back(cache.kv().num_entries(1, cache.lane(l, g)));
        }
    }
    return sizes;
}

// The heads' shares add up to the layer's budget within rounding: with b = budget - window and
// f = floor(alpha b), sum_g cap_g = round of (1 - alpha) H_kv b + H_kv f, in (T - 1.5 H, T + 0.5
// H].
TEST(AdaBudgetTest, HeadSharesSumToTheLayerBudget) {
    const DriverOptions options{
        .num_layers = 3, .num_heads = 8, .num_kv_heads = 4, .head_dim = 8, .block_size = 16};
    for (double alpha : {0.0, 0.2, 0.37, 0.5}) {
        auto d = driver({{"budget", 23}, {"window", 4}, {"alpha", alpha}}, options);
        const int32_t total = 4 * (23 - 4);
        for (const auto& heads : compact_one(*d, 70, 5, {1, 1, 1, 1})) {
            int32_t sum = 0;
            for (int32_t n : heads) sum += n - 4;
            EXPECT_GT(sum, total - 1.5 * 4) << "alpha " << alpha;
            EXPECT_LE(sum, total + 0.5 * 4) << "alpha " << alpha;
            if (alpha == 0.0) {
                EXPECT_EQ(sum, total);
            }
        }
    }
}

// A head whose window attends diffusely gets more of the budget than one that attends to a few
// entries: scaling the queries of KV head 0's group down flattens its softmax, scaling head 1's up
// sharpens it.
TEST(AdaBudgetTest, DiffuseHeadsGetMoreThanConcentratedOnes) {
    const DriverOptions options{
        .num_layers = 2, .num_heads = 4, .num_kv_heads = 2, .head_dim = 8, .block_size = 16};
    auto d = driver({{"budget", 20}, {"window", 4}, {"kernel", 1}}, options);
    for (const auto& heads : compact_one(*d, 60, 9, {0.05f, 10.0f})) {
        EXPECT_GT(heads[0], heads[1] + 4) << heads[0] << " vs " << heads[1];
        EXPECT_GE(heads[1], 4 + 3);  // the floor: window + floor(0.2 * 16)
    }
}

// alpha = 1 gives every head the same share b: uniform per-head SnapKV, each head its own top b.
TEST(AdaBudgetTest, AlphaOneIsUniformPerHeadSnapKV) {
    const DriverOptions options{
        .num_layers = 2, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8, .block_size = 5};
    auto d = driver({{"budget", 15}, {"window", 5}, {"kernel", 3}, {"alpha", 1.0}}, options);
    Recorder rec(*d, 1);
    for (const StepPlan& plan : prefill_plans({47}, 16)) {
        rec.run(plan, d->random_inputs(plan.num_tokens(), 31 + plan.seqs[0].num_computed_tokens));
    }
    auto& cache = dynamic_cast<EvictingCacheManager&>(*d->method().cache);
    for (int32_t l = 0; l < 2; ++l) {
        for (int32_t g = 0; g < 2; ++g) {
            bool near_tie = false;
            std::vector<int32_t> want =
                ranked(naive_scores(rec.history(1), l, d->args(), 47, 5, g, 3), 10, &near_tie);
            for (int32_t p = 42; p < 47; ++p) want.push_back(p);
            std::sort(want.begin(), want.end());
            ASSERT_FALSE(near_tie);
            const auto pos = cache.entry_positions(1, cache.lane(l, g));
            EXPECT_EQ(std::vector<int32_t>(pos.begin(), pos.end()), want)
                << "layer " << l << " head " << g;
        }
    }
}

TEST(AdaKnobsTest, ErrorsNameTheKnob) {
    for (const auto& [knobs, name] : std::vector<std::pair<nlohmann::json, std::string>>{
             {{{"budget", 32}}, "'budget'"},  // not above the default window
             {{{"budget", 10}, {"window", 10}}, "'budget'"},
             {{{"window", 0}}, "'window'"},
             {{{"kernel", 4}}, "'kernel'"},
             {{{"alpha", 1.5}}, "'alpha'"},
             {{{"recent", 8}}, "recent"}}) {
        auto d = ContractDriver::create("adakv", knobs);
        ASSERT_FALSE(d.ok()) << knobs.dump();
        EXPECT_NE(d.status().message().find(name), std::string::npos) << d.status().to_string();
    }
}

}  // namespace
}  // namespace se::testing
