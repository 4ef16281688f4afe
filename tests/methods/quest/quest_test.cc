// Quest against a naive statement of its rule (SPECS.md 2.1): per (layer, block, KV head) the
// elementwise min and max of the block's keys; at decode, layers from skip_layers on read the
// top K - 1 of the older pages by u_p = max_h sum_d max(q_hd M_pd, q_hd m_pd) plus the newest
// page, K = max(3, B / P), and everything while L <= max(B, K P). Prefill reads everything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

#include "methods/quest/quest_cache_manager.h"
#include "methods/quest/quest_page_score.h"
#include "support/methods/driver_session.h"
#include "support/methods/token_history.h"

namespace se::testing {
namespace {

std::unique_ptr<ContractDriver> driver(const std::string& method, const nlohmann::json& knobs,
                                       DriverOptions options) {
    return make_driver(method, knobs, options);
}

QuestCacheManager& quest_cache(ContractDriver& d) {
    return dynamic_cast<QuestCacheManager&>(*d.method().cache);
}

// The min and max of page `page`'s keys, recomputed from scratch: f32 [num_kv_heads * head_dim].
struct Bounds {
    std::vector<float> lo;
    std::vector<float> hi;
};

Bounds naive_bounds(const TokenHistory& h, SeqId seq, int32_t layer, int32_t page,
                    const DriverOptions& o) {
    const int32_t d = o.head_dim;
    Bounds b{.lo = std::vector<float>(static_cast<size_t>(o.num_kv_heads * d), INFINITY),
             .hi = std::vector<float>(static_cast<size_t>(o.num_kv_heads * d), -INFINITY)};
    const int32_t end = std::min(h.length(seq), (page + 1) * o.block_size);
    for (int32_t t = page * o.block_size; t < end; ++t) {
        for (int32_t g = 0; g < o.num_kv_heads; ++g) {
            const float* k = h.key(seq, layer, t, g);
            for (int32_t i = 0; i < d; ++i) {
                b.lo[g * d + i] = std::min(b.lo[g * d + i], k[i]);
                b.hi[g * d + i] = std::max(b.hi[g * d + i], k[i]);
            }
        }
    }
    return b;
}

// The summaries the cache manager holds for every page of `seq` equal the recomputed ones.
void expect_summaries(ContractDriver& d, const TokenHistory& h, SeqId seq, const DriverOptions& o) {
    const QuestCacheManager& cache = quest_cache(d);
    const auto table = cache.kv().block_table(seq);
    const int32_t len = h.length(seq);
    ASSERT_EQ(cache.kv().num_entries(seq), len);
    for (int32_t p = 0; p * o.block_size < len; ++p) {
        for (int32_t l = 0; l < o.num_layers; ++l) {
            const Bounds want = naive_bounds(h, seq, l, p, o);
            for (int32_t g = 0; g < o.num_kv_heads; ++g) {
                const auto lo = cache.key_min(l, table[p], g);
                const auto hi = cache.key_max(l, table[p], g);
                for (int32_t i = 0; i < o.head_dim; ++i) {
                    ASSERT_EQ(lo[i], want.lo[g * o.head_dim + i])
                        << "seq " << seq << " page " << p << " layer " << l << " head " << g;
                    ASSERT_EQ(hi[i], want.hi[g * o.head_dim + i])
                        << "seq " << seq << " page " << p << " layer " << l << " head " << g;
                }
            }
        }
    }
}

// The positions a decode query of `seq` (every head's q, f32 [num_heads * head_dim]) reads in
// `layer`, by the rule written out; nullopt when the last chosen and the first unchosen page
// scores are too close for float and double to agree on their order.
std::optional<std::vector<int32_t>> naive_choice(const TokenHistory& h, SeqId seq, int32_t layer,
                                                 const float* q, const DriverOptions& o,
                                                 int32_t budget, int32_t skip_layers) {
    const int32_t len = h.length(seq);
    const int32_t bs = o.block_size;
    const int32_t k_pages = std::max(3, budget / bs);
    std::vector<int32_t> positions;
    if (layer < skip_layers || len <= std::max(budget, k_pages * bs)) {
        positions.resize(static_cast<size_t>(len));
        std::iota(positions.begin(), positions.end(), 0);
        return positions;
    }
    const int32_t n = (len + bs - 1) / bs;
    const int32_t group = o.num_heads / o.num_kv_heads;
    std::vector<double> score(static_cast<size_t>(n - 1), -INFINITY);
    for (int32_t p = 0; p + 1 < n; ++p) {
        const Bounds b = naive_bounds(h, seq, layer, p, o);
        for (int32_t head = 0; head < o.num_heads; ++head) {
            const int32_t g = head / group;
            double u = 0.0;
            for (int32_t i = 0; i < o.head_dim; ++i) {
                const double qi = q[head * o.head_dim + i];
                u += std::max(qi * b.hi[g * o.head_dim + i], qi * b.lo[g * o.head_dim + i]);
            }
            score[p] = std::max(score[p], u);
        }
    }
    std::vector<int32_t> order(static_cast<size_t>(n - 1));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return score[a] > score[b]; });
    const int32_t take = std::min(k_pages - 1, n - 1);
    if (take < n - 1 && score[order[take - 1]] - score[order[take]] <
                            1e-4 * (1.0 + std::fabs(score[order[take]]))) {
        return std::nullopt;
    }
    std::vector<int32_t> pages(order.begin(), order.begin() + take);
    pages.push_back(n - 1);
    std::sort(pages.begin(), pages.end());
    for (const int32_t p : pages) {
        for (int32_t t = p * bs; t < std::min(len, (p + 1) * bs); ++t) positions.push_back(t);
    }
    return positions;
}

ReadRule quest_rule(DriverSession& s, int32_t budget, int32_t skip_layers) {
    return [&s, budget, skip_layers](SeqId seq, int32_t layer, const float* q) {
        return naive_choice(s.history(), seq, layer, q, s.options(), budget, skip_layers);
    };
}

struct Shape {
    int32_t num_heads;
    int32_t num_kv_heads;
};

void PrintTo(const Shape& s, std::ostream* os) {
    *os << s.num_heads << " heads, " << s.num_kv_heads << " KV heads";
}

class QuestTest : public ::testing::TestWithParam<Shape> {};

TEST_P(QuestTest, ReadsTheTopPagesByTheirBoundAndKeepsExactSummaries) {
    const int32_t budget = 40;  // K = 5 pages of 8
    const int32_t skip = 1;
    const DriverOptions o{.num_layers = 4,
                          .num_heads = GetParam().num_heads,
                          .num_kv_heads = GetParam().num_kv_heads,
                          .head_dim = 8,
                          .block_size = 8};
    DriverSession s("quest", {{"budget", budget}, {"skip_layers", skip}}, o);
    // Ragged prompts, none a multiple of the page, chunks of 13: the second one turns sparse
    // during decode (L > 40).
    const std::vector<SeqId> ids = {1, 2, 3};
    for (const auto& step : s.prefill(ids, {53, 29, 70}, 13)) {
        s.expect_causal_reads(step);
        for (const SeqId id : ids) expect_summaries(s.driver(), s.history(), id, o);
    }
    int32_t skipped = 0;
    for (int32_t step = 0; step < 20; ++step) {
        skipped += s.expect_decode_reads(s.decode(ids), quest_rule(s, budget, skip));
        for (const SeqId id : ids) expect_summaries(s.driver(), s.history(), id, o);
    }
    EXPECT_LE(skipped, 3) << "too many near ties to trust the comparison";
    // Nothing is evicted: the pool holds every token's block, and gives all back on release.
    const CacheCapacity cap = s.driver().method().cache->capacity();
    int64_t blocks = 0;
    for (const SeqId id : ids) blocks += (s.history().length(id) + o.block_size - 1) / o.block_size;
    EXPECT_EQ(cap.num_blocks - cap.num_free_blocks, blocks);
    for (const SeqId id : ids) s.driver().method().cache->release(id);
    EXPECT_EQ(s.driver().method().cache->capacity().num_free_blocks, cap.num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Gqa, QuestTest, ::testing::Values(Shape{2, 2}, Shape{8, 2}, Shape{8, 1}),
                         [](const auto& info) {
                             return "G" +
                                    std::to_string(info.param.num_heads / info.param.num_kv_heads);
                         });

TEST(QuestBoundTest, TheBoundIsAtLeastEveryDotProductOfThePage) {
    const DriverOptions o{.num_layers = 2, .num_heads = 4, .num_kv_heads = 2, .head_dim = 16};
    DriverSession s("quest", {{"budget", 48}}, o);
    s.prefill({1}, {61}, 32);
    const QuestCacheManager& cache = quest_cache(s.driver());
    const auto table = cache.kv().block_table(1);
    std::mt19937_64 rng(7);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> q(static_cast<size_t>(o.head_dim));
    int32_t tight = 0;
    for (int32_t trial = 0; trial < 200; ++trial) {
        for (float& x : q) x = normal(rng);
        for (int32_t l = 0; l < o.num_layers; ++l) {
            for (int32_t p = 0; p * o.block_size < 61; ++p) {
                for (int32_t g = 0; g < o.num_kv_heads; ++g) {
                    const float u =
                        page_upper_bound(q.data(), cache.key_min(l, table[p], g).data(),
                                         cache.key_max(l, table[p], g).data(), o.head_dim);
                    double exact = -INFINITY;
                    for (int32_t t = p * o.block_size; t < std::min(61, (p + 1) * o.block_size);
                         ++t) {
                        const float* k = s.history().key(1, l, t, g);
                        double dot = 0.0;
                        for (int32_t i = 0; i < o.head_dim; ++i) dot += double{q[i]} * k[i];
                        exact = std::max(exact, dot);
                    }
                    ASSERT_GE(u, exact - 1e-4) << "layer " << l << " page " << p << " head " << g;
                    tight += u - exact < 1e-4;
                }
            }
        }
    }
    // The last page holds 13 keys, the others 16: the bound is loose but finite.
    EXPECT_LT(tight, 200 * 2 * 4 * 2);
}

TEST(QuestBoundTest, ToyPage) {
    // q = (1, -1), keys (2, 0) and (0, 3): m = (0, 0), M = (2, 3), u = 2 = the exact max.
    const float q[] = {1.0f, -1.0f};
    const float lo[] = {0.0f, 0.0f};
    const float hi[] = {2.0f, 3.0f};
    EXPECT_EQ(page_upper_bound(q, lo, hi, 2), 2.0f);
    // The same page built by the cache manager from the two stored keys.
    const DriverOptions o{
        .num_layers = 1, .num_heads = 1, .num_kv_heads = 1, .head_dim = 2, .block_size = 2};
    auto d = driver("quest", {{"skip_layers", 0}}, o);
    LayerInputs in{.q = {1, -1, 1, -1}, .k = {2, 0, 0, 3}, .v = {1, 1, 1, 1}};
    d->step({.phase = StepPhase::kPrefill,
             .seqs = {{.seq_id = 1, .num_new_tokens = 2, .num_computed_tokens = 0}}},
            {in});
    const QuestCacheManager& cache = quest_cache(*d);
    const int32_t block = cache.kv().block_table(1)[0];
    const auto m = cache.key_min(0, block, 0);
    const auto big_m = cache.key_max(0, block, 0);
    EXPECT_EQ(std::vector<float>(m.begin(), m.end()), (std::vector<float>{0.0f, 0.0f}));
    EXPECT_EQ(std::vector<float>(big_m.begin(), big_m.end()), (std::vector<float>{2.0f, 3.0f}));
    EXPECT_EQ(page_upper_bound(q, m.data(), big_m.data(), 2), 2.0f);
    EXPECT_EQ(std::max(q[0] * 2 + q[1] * 0, q[0] * 0 + q[1] * 3), 2.0f);
}

TEST(QuestDenseTest, EnoughPagesForTheWholeContextComputeWhatDenseComputes) {
    const DriverOptions o{
        .num_layers = 3, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8, .block_size = 8};
    // budget 4096 covers everything; budget 17 gives K = 3 pages, so up to L = 24 every page is
    // read although L > B.
    for (const int32_t budget : {4096, 17}) {
        DriverSession quest("quest", {{"budget", budget}, {"skip_layers", 0}}, o);
        DriverSession dense("dense", nlohmann::json::object(), o);
        const std::vector<SeqId> ids = {1, 2};
        const auto a = quest.prefill(ids, {20, 11}, 7);
        const auto b = dense.prefill(ids, {20, 11}, 7);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].outs, b[i].outs);
        for (int32_t step = 0; step < 4; ++step) {
            EXPECT_EQ(quest.decode(ids).outs, dense.decode(ids).outs) << "budget " << budget;
        }
        // One more token: sequence 1 has 25 entries, 4 pages; with budget 17 only 3 are read.
        const auto x = quest.decode(ids).outs;
        const auto y = dense.decode(ids).outs;
        const int32_t qw = o.num_heads * o.head_dim;
        const std::vector<float> x1(x[2].begin(), x[2].begin() + qw);
        const std::vector<float> y1(y[2].begin(), y[2].begin() + qw);
        if (budget == 4096) {
            EXPECT_EQ(x, y);
        } else {
            EXPECT_NE(x1, y1) << "four pages, three read: the output must move";
        }
    }
}

TEST(QuestPrefixTest, CachedBlocksBringTheirSummaries) {
    const int32_t budget = 24;  // K = 3 pages of 8
    const DriverOptions o{.num_layers = 3,
                          .num_heads = 8,
                          .num_kv_heads = 2,
                          .head_dim = 8,
                          .block_size = 8,
                          .enable_prefix_caching = true};
    DriverSession s("quest", {{"budget", budget}, {"skip_layers", 1}}, o);
    CacheManager& cache = *s.driver().method().cache;
    std::vector<int32_t> tokens(45);
    std::iota(tokens.begin(), tokens.end(), 1);
    s.prefill({1}, {45}, 16);
    const auto first_table = quest_cache(s.driver()).kv().block_table(1);
    const std::vector<int32_t> cached(first_table.begin(), first_table.begin() + 5);
    cache.publish_prefix(1, {.ns = 7, .tokens = tokens});
    cache.release(1);
    // Sequence 2 shares the first 40 tokens (5 blocks), then goes its own way; sequence 3 is
    // fresh and takes blocks from the free list, sequence 1's last (partial) block among them.
    std::vector<int32_t> second(tokens.begin(), tokens.begin() + 40);
    for (int32_t t = 0; t < 13; ++t) second.push_back(1000 + t);
    ASSERT_EQ(cache.attach_prefix(2, {.ns = 7, .tokens = second}), 40);
    s.history().copy_prefix(1, 2, 40);
    const auto table = quest_cache(s.driver()).kv().block_table(2);
    EXPECT_EQ(std::vector<int32_t>(table.begin(), table.end()), cached);
    s.prefill({2, 3}, {53, 30}, 16);
    expect_summaries(s.driver(), s.history(), 2, o);
    expect_summaries(s.driver(), s.history(), 3, o);
    int32_t skipped = 0;
    for (int32_t step = 0; step < 6; ++step) {
        skipped += s.expect_decode_reads(s.decode({2, 3}), quest_rule(s, budget, 1));
        expect_summaries(s.driver(), s.history(), 2, o);
    }
    EXPECT_LE(skipped, 1);
    EXPECT_GT(cache.prefix_cache_stats().num_hit_tokens, 0);
}

TEST(QuestMemoryTest, ThePoolPaysForTheSummaries) {
    const DriverOptions o{.num_layers = 4, .num_heads = 8, .num_kv_heads = 2, .head_dim = 16};
    auto quest = driver("quest", nlohmann::json::object(), o);
    auto dense = driver("dense", nlohmann::json::object(), o);
    const int64_t entry_bytes = int64_t{o.num_kv_heads} * o.head_dim * 4;  // f32 KV
    const int64_t kv_bytes = o.num_layers * 2 * o.block_size * entry_bytes;
    const int64_t summary_bytes = o.num_layers * 2 * entry_bytes;
    EXPECT_EQ(dense->method().cache->capacity().num_blocks, o.kv_cache_bytes / kv_bytes);
    EXPECT_EQ(quest->method().cache->capacity().num_blocks,
              o.kv_cache_bytes / (kv_bytes + summary_bytes));
}

TEST(QuestKnobsTest, ErrorsNameTheKnob) {
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {{{"budget", 0}}, "'budget'"},           {{{"budget", "many"}}, "'budget'"},
        {{{"skip_layers", 5}}, "'skip_layers'"}, {{{"skip_layers", -1}}, "'skip_layers'"},
        {{{"page_size", 16}}, "'page_size'"},
    };
    for (const auto& [knobs, name] : cases) {
        auto d = ContractDriver::create("quest", knobs);
        ASSERT_FALSE(d.ok()) << knobs.dump();
        EXPECT_NE(d.status().message().find(name), std::string::npos) << d.status().to_string();
    }
}

}  // namespace
}  // namespace se::testing
