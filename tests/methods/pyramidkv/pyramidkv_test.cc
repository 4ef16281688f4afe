// PyramidKV against naive statements of its rule (SPECS.md 3.5): the per-layer budget table of
// KVCache-Factory's schedule for 32 layers, written out by hand; each layer keeping its share
// (sink + the top of the pooled window scores + the window) after a prompt's final chunk
// (G = 1, 4, 8; ragged, chunked batches); decode reading exactly the kept set; evicted blocks
// given back per lane; knob errors naming the knob.
#include <gtest/gtest.h>

#include <numeric>

#include "methods/pyramidkv/pyramid_schedule.h"
#include "support/methods/window_keep.h"

namespace se::testing {
namespace {

// The table for N = 32, window 8, beta 20, from b = B - w; min = b / 20; max = 2b - min;
// max >= L - w moves max to L - w and min to 2b - max; step = (max - min) / 31; layer l selects
// max - l * step.
TEST(PyramidScheduleTest, ReproducesTheBudgetTableFor32Layers) {
    auto table = [](int32_t budget, int32_t len) {
        return pyramid_selection({.budget = budget, .window = 8, .beta = 20, .num_layers = 32},
                                 len);
    };
    // B = 40 (b = 32, min 1, max 63), L = 100: step 62 / 31 = 2.
    const std::vector<int32_t> b40_l100 = {63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43,
                                           41, 39, 37, 35, 33, 31, 29, 27, 25, 23, 21,
                                           19, 17, 15, 13, 11, 9,  7,  5,  3,  1};
    EXPECT_EQ(table(40, 100), b40_l100);
    // L = 70: max 63 >= 62, so max = 62, min = 2; step 60 / 31 = 1.
    std::vector<int32_t> b40_l70;
    for (int32_t v = 62; v >= 31; --v) b40_l70.push_back(v);
    EXPECT_EQ(table(40, 70), b40_l70);
    // L = 64 = 2b: max = 56, min = 8; step 48 / 31 = 1.
    std::vector<int32_t> b40_l64;
    for (int32_t v = 56; v >= 25; --v) b40_l64.push_back(v);
    EXPECT_EQ(table(40, 64), b40_l64);
    // B <= L < 2b: every layer b; L < B: no compression.
    EXPECT_EQ(table(40, 63), std::vector<int32_t>(32, 32));
    EXPECT_EQ(table(40, 40), std::vector<int32_t>(32, 32));
    EXPECT_TRUE(table(40, 39).empty());
    // B = 2048 (b = 2040, min 102, max 3978), L = 4096: step 3876 / 31 = 125.
    const std::vector<int32_t> b2048_l4096 = {3978, 3853, 3728, 3603, 3478, 3353, 3228, 3103,
                                              2978, 2853, 2728, 2603, 2478, 2353, 2228, 2103,
                                              1978, 1853, 1728, 1603, 1478, 1353, 1228, 1103,
                                              978,  853,  728,  603,  478,  353,  228,  103};
    EXPECT_EQ(table(2048, 4096), b2048_l4096);
    // B = 628 (b = 620, min 31, max 1209), L = 4096: step 1178 / 31 = 38.
    const std::vector<int32_t> b628_l4096 = {
        1209, 1171, 1133, 1095, 1057, 1019, 981, 943, 905, 867, 829, 791, 753, 715, 677, 639,
        601,  563,  525,  487,  449,  411,  373, 335, 297, 259, 221, 183, 145, 107, 69,  31};
    EXPECT_EQ(table(628, 4096), b628_l4096);
    // The layers average b where 31 divides max - min, and b + r / 2 (r the remainder) where the
    // integer step rounds down.
    auto sum = [](const std::vector<int32_t>& v) { return std::accumulate(v.begin(), v.end(), 0); };
    EXPECT_EQ(sum(b40_l100), 32 * 32);
    EXPECT_EQ(sum(b628_l4096), 620 * 32);
    EXPECT_EQ(2 * sum(b2048_l4096), (2 * 2040 + 1) * 32);  // r = 1
    EXPECT_EQ(2 * sum(b40_l70), (2 * 32 + 29) * 32);       // r = 60 - 31
    // One layer selects b.
    EXPECT_EQ(pyramid_selection({.budget = 40, .window = 8, .beta = 20, .num_layers = 1}, 500),
              std::vector<int32_t>{32});
}

// The schedule again, written out for the naive side.
std::vector<int32_t> naive_schedule(int32_t budget, int32_t window, int32_t beta, int32_t layers,
                                    int32_t len) {
    const int32_t b = budget - window;
    if (len < budget) return {};
    if (len < 2 * b) return std::vector<int32_t>(static_cast<size_t>(layers), b);
    int32_t lo = b / beta;
    int32_t hi = 2 * b - lo;
    if (hi >= len - window) {
        hi = len - window;
        lo = 2 * b - hi;
    }
    std::vector<int32_t> out;
    for (int32_t l = 0; l < layers; ++l) out.push_back(hi - l * ((hi - lo) / (layers - 1)));
    return out;
}

struct Rule {
    int32_t budget = 0;
    int32_t window = 0;
    int32_t sink = 0;
    int32_t kernel = 1;
    bool max_pool = true;
    int32_t beta = 20;

    nlohmann::json knobs() const {
        return {{"budget", budget}, {"window", window}, {"sink", sink},
                {"kernel", kernel}, {"beta", beta},     {"pooling", max_pool ? "max" : "avg"}};
    }
    // Layer l selects `selected` entries, the sinks included (its schedule entry).
    WindowKeepRule keep(int32_t selected) const {
        return {.window = window,
                .sink = sink,
                .kernel = kernel,
                .max_pool = max_pool,
                .selected = selected};
    }
};

std::unique_ptr<ContractDriver> driver(const Rule& rule, DriverOptions options) {
    return make_driver("pyramidkv", rule.knobs(), options);
}

class PyramidTest : public ::testing::TestWithParam<WindowCase> {};

TEST_P(PyramidTest, EachLayerKeepsItsShareAndReadsExactlyIt) {
    const int32_t layers = 6;
    const Rule rule{
        .budget = 40, .window = 8, .sink = 1, .kernel = 5, .max_pool = GetParam().max_pool};
    auto d = driver(rule, {.num_layers = layers,
                           .num_heads = GetParam().num_heads,
                           .num_kv_heads = GetParam().num_kv_heads,
                           .head_dim = 8,
                           .block_size = 16});
    EvictingCacheManager& cache = cache_of(*d);
    // A pyramid (150), a pyramid with max = L - w (70), the uniform regime (50) and a prompt under
    // the budget (30); chunks of 16, the second prompt joining a step late.
    std::vector<int32_t> len = {150, 70, 50, 30};
    const auto num_seqs = static_cast<int32_t>(len.size());
    const TokenData data(*d, num_seqs, 160, 3);
    prefill(*d, data, len, 16, {0, 1, 0, 0});
    std::vector<std::vector<std::vector<int32_t>>> kept(len.size());  // [seq][layer] positions
    int64_t blocks = 0;
    for (int32_t i = 0; i < num_seqs; ++i) {
        const std::vector<int32_t> schedule =
            naive_schedule(rule.budget, rule.window, rule.beta, layers, len[i]);
        for (int32_t l = 0; l < layers; ++l) {
            const bool whole = schedule.empty() || schedule[l] + rule.window >= len[i];
            if (whole) {
                kept[i].push_back(first_positions(len[i]));
                EXPECT_EQ(positions(cache, i + 1, l), kept[i][l]);
            } else {
                kept[i].push_back(expect_kept(*d, data, rule.keep(schedule[l]), i, l,
                                              first_positions(len[i]), len[i]));
                EXPECT_EQ(kept[i][l].size(), static_cast<size_t>(schedule[l] + rule.window));
            }
            const int64_t table = cache.kv().block_table(i + 1, cache.lane(l)).size();
            EXPECT_EQ(table, (static_cast<int64_t>(kept[i][l].size()) + 15) / 16)
                << "evicted blocks were not freed";
            blocks += table;
        }
    }
    // Layers really differ: 150 tokens keep 63 + 8 at layer 0 and 3 + 8 at layer 5.
    EXPECT_EQ(kept[0][0].size(), 71u);
    EXPECT_EQ(kept[0][5].size(), 11u);
    EXPECT_EQ(cache.capacity().num_blocks - cache.capacity().num_free_blocks, blocks);
    for (int32_t step = 0; step < 3; ++step) {
        const auto outs = decode(*d, data, len);
        for (int32_t i = 0; i < num_seqs; ++i) {
            for (int32_t l = 0; l < layers; ++l) {
                kept[i][l].push_back(len[i]);
                EXPECT_EQ(positions(cache, i + 1, l), kept[i][l]) << "decode evicted";
                expect_reads(*d, data, outs, i, i, l, len[i], kept[i][l]);
            }
            ++len[i];
        }
    }
    for (SeqId s = 1; s <= num_seqs; ++s) cache.release(s);
    EXPECT_EQ(cache.capacity().num_free_blocks, cache.capacity().num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Gqa, PyramidTest, window_cases(), window_case_name);

TEST(PyramidLanesTest, ThirtyTwoLayersHoldTheTable) {
    // The same table, end to end: after the prompt each layer's lane holds its share plus the
    // window, in ceil(entries / block) blocks.
    const Rule rule{.budget = 40, .window = 8, .sink = 0, .kernel = 7, .max_pool = true};
    auto d = driver(rule, {.num_layers = 32, .num_heads = 4, .num_kv_heads = 2, .head_dim = 8});
    EvictingCacheManager& cache = cache_of(*d);
    const TokenData data(*d, 2, 100, 1);
    prefill(*d, data, {100, 70}, 32);
    for (int32_t l = 0; l < 32; ++l) {
        const int32_t want[2] = {63 - 2 * l + 8, 62 - l + 8};
        for (int32_t i = 0; i < 2; ++i) {
            const auto lane = cache.lane(l);
            EXPECT_EQ(cache.kv().num_entries(i + 1, lane), want[i]) << "layer " << l;
            EXPECT_EQ(static_cast<int32_t>(cache.kv().block_table(i + 1, lane).size()),
                      (want[i] + 15) / 16);
        }
    }
}

TEST(PyramidOracleTest, DecodeIsNotBounded) {
    // Decode appends to every layer without eviction: admission charges every token (16 MiB of
    // 2 KiB blocks over 2 layers hold 65536).
    auto d = driver({.budget = 40, .window = 8, .sink = 0, .kernel = 7, .max_pool = true},
                    {.num_layers = 2, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8});
    EXPECT_TRUE(d->method().cache->oracle().fits_alone(65536));
    EXPECT_FALSE(d->method().cache->oracle().fits_alone(65537));
}

TEST(PyramidKnobsTest, ErrorsNameTheKnob) {
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {{{"budget", 8}}, "'budget'"},
        {{{"budget", 0}}, "'budget'"},
        {{{"window", 0}}, "'window'"},
        {{{"beta", 0}}, "'beta'"},
        {{{"budget", 40}, {"sink", 2}}, "'sink'"},  // b / beta = 32 / 20 = 1
        {{{"kernel", 2}}, "'kernel'"},
        {{{"pooling", "sum"}}, "'pooling'"},
        {{{"decode_interval", 4}}, "'decode_interval'"},
    };
    for (const auto& [knobs, name] : cases) {
        auto d = ContractDriver::create("pyramidkv", knobs);
        ASSERT_FALSE(d.ok()) << knobs.dump();
        EXPECT_NE(d.status().message().find(name), std::string::npos) << d.status().to_string();
    }
    EXPECT_TRUE(ContractDriver::create("pyramidkv", {{"budget", 40}, {"sink", 1}}).ok());
    EXPECT_TRUE(ContractDriver::create("pyramidkv", {{"budget", 9}}).ok());
}

}  // namespace
}  // namespace se::testing
