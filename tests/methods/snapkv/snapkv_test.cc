// SnapKV against naive statements of its rule (SPECS.md 3.2), through the contract alone: after a
// prompt's final chunk each layer keeps sink + the top of the pooled window scores + the window
// (G = 1, 4, 8; ragged, chunked batches), decode reads exactly that set, evicted blocks go back
// to the pool, a planted spike keeps its pooling neighbourhood, chunking never changes the kept
// set, decode re-eviction compacts back to the budget, and knob errors name the knob. The window
// score itself is checked against a reference in window_scores_test.cc.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/methods/method_harness.h"
#include "support/methods/window_keep.h"

namespace se::testing {
namespace {

// The knobs, as the naive side reads them.
struct Rule {
    int32_t budget = 0;
    int32_t window = 0;
    int32_t sink = 0;
    int32_t kernel = 1;
    bool max_pool = true;
    int32_t decode_interval = 0;

    nlohmann::json knobs() const {
        return {{"budget", budget},
                {"window", window},
                {"sink", sink},
                {"kernel", kernel},
                {"pooling", max_pool ? "max" : "avg"},
                {"decode_interval", decode_interval}};
    }
    // Every layer selects budget - window entries, the sinks included.
    WindowKeepRule keep() const {
        return {.window = window,
                .sink = sink,
                .kernel = kernel,
                .max_pool = max_pool,
                .selected = budget - window};
    }
};

std::unique_ptr<ContractDriver> driver(const Rule& rule, DriverOptions options) {
    return make_driver("snapkv", rule.knobs(), options);
}

class SnapTest : public ::testing::TestWithParam<WindowCase> {};

TEST_P(SnapTest, KeepsWhatTheWindowAttendsToAndReadsExactlyThat) {
    const Rule rule{
        .budget = 40, .window = 8, .sink = 3, .kernel = 5, .max_pool = GetParam().max_pool};
    const DriverOptions options{.num_layers = 2,
                                .num_heads = GetParam().num_heads,
                                .num_kv_heads = GetParam().num_kv_heads,
                                .head_dim = 8,
                                .block_size = 16};
    auto d = driver(rule, options);
    EvictingCacheManager& cache = cache_of(*d);
    // Ragged prompts in chunks of 16, the second joining a step late; the third fits the budget.
    std::vector<int32_t> len = {83, 61, 29};
    const TokenData data(*d, 3, 100, 7);
    prefill(*d, data, len, 16, {0, 1, 0});
    std::vector<std::vector<std::vector<int32_t>>> kept(3);  // [seq][layer] positions
    int64_t blocks = 0;
    for (int32_t i = 0; i < 3; ++i) {
        for (int32_t l = 0; l < 2; ++l) {
            const std::vector<int32_t> prompt = first_positions(len[i]);
            kept[i].push_back(len[i] <= rule.budget
                                  ? prompt
                                  : expect_kept(*d, data, rule.keep(), i, l, prompt, len[i]));
            EXPECT_EQ(positions(cache, i + 1, l), kept[i][l]);
            const int64_t table = cache.kv().block_table(i + 1, cache.lane(l)).size();
            EXPECT_EQ(table, (static_cast<int64_t>(kept[i][l].size()) + 15) / 16)
                << "evicted blocks were not freed";
            blocks += table;
        }
    }
    EXPECT_EQ(kept[0][0].size(), 40u);
    EXPECT_EQ(blocks_in_use(cache), blocks);
    // Decode appends without eviction and reads exactly the kept entries plus the new ones.
    for (int32_t step = 0; step < 3; ++step) {
        const auto outs = decode(*d, data, len);
        for (int32_t i = 0; i < 3; ++i) {
            for (int32_t l = 0; l < 2; ++l) {
                kept[i][l].push_back(len[i]);
                expect_reads(*d, data, outs, i, i, l, len[i], kept[i][l]);
                EXPECT_EQ(positions(cache, i + 1, l), kept[i][l]);
            }
            ++len[i];
        }
    }
    for (SeqId s = 1; s <= 3; ++s) cache.release(s);
    EXPECT_EQ(blocks_in_use(cache), 0);
}

INSTANTIATE_TEST_SUITE_P(Gqa, SnapTest, window_cases(), window_case_name);

class SnapSpikeTest : public ::testing::TestWithParam<bool> {};

TEST_P(SnapSpikeTest, ASpikeKeepsItsPoolingNeighbourhood) {
    // Every window query attends (almost) only to position 30: P is one-hot there, so after
    // pooling with kernel 5 positions 28..32 share the top score and fill the 5 selected slots.
    const Rule rule{.budget = 13, .window = 8, .sink = 0, .kernel = 5, .max_pool = GetParam()};
    auto d = driver(rule, {.num_layers = 1, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8});
    const int32_t len = 60;
    const int32_t spike = 30;
    const int32_t dim = d->args().head_dim;
    TokenData data(*d, 1, len, 11);
    for (int32_t p = 0; p < len; ++p) std::fill_n(data.k(0, 0, p), 2 * dim, 0.0f);
    for (int32_t g = 0; g < 2; ++g) data.k(0, 0, spike)[g * dim] = 8.0f;
    for (int32_t p = len - rule.window; p < len; ++p) {
        std::fill_n(data.q(0, 0, p), 8 * dim, 0.0f);
        for (int32_t h = 0; h < 8; ++h) data.q(0, 0, p)[h * dim] = 8.0f;
    }
    prefill(*d, data, {len}, 16);
    std::vector<int32_t> want = {28, 29, 30, 31, 32};
    for (int32_t p = len - rule.window; p < len; ++p) want.push_back(p);
    EXPECT_EQ(positions(cache_of(*d), 1, 0), want);
}

INSTANTIATE_TEST_SUITE_P(Pooling, SnapSpikeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Max" : "Avg"; });

TEST(SnapChunkTest, ChunkingNeverChangesTheKeptSetOrTheOutput) {
    // Chunks of 5 (smaller than the window, dividing neither prompt) and 16 against whole
    // prompts: the window rows span chunks, yet the kept set and the first decode are identical.
    const Rule rule{.budget = 40, .window = 8, .sink = 3, .kernel = 5, .max_pool = true};
    const DriverOptions options{
        .num_layers = 2, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8, .max_step_tokens = 160};
    const std::vector<int32_t> len = {83, 71};
    auto run = [&](int32_t chunk) {
        auto d = driver(rule, options);
        const TokenData data(*d, 2, 90, 5);
        prefill(*d, data, len, chunk);
        std::vector<std::vector<int32_t>> kept;
        for (SeqId s = 1; s <= 2; ++s) {
            for (int32_t l = 0; l < 2; ++l) kept.push_back(positions(cache_of(*d), s, l));
        }
        return std::make_pair(kept, decode(*d, data, len));
    };
    const auto whole = run(83);
    EXPECT_EQ(whole.first[0].size(), 40u);
    for (int32_t chunk : {5, 16}) {
        const auto chunked = run(chunk);
        EXPECT_EQ(chunked.first, whole.first) << "chunk " << chunk;
        EXPECT_EQ(chunked.second, whole.second) << "chunk " << chunk;
    }
}

TEST(SnapDecodeTest, DecodeReEvictionCompactsBackToTheBudget) {
    // decode_interval 4: once a layer holds more than budget + 4 entries after a decode step, the
    // last 8 queries (prompt and decode rows) rescore the resident entries and it keeps 40 again.
    const Rule rule{
        .budget = 40, .window = 8, .sink = 3, .kernel = 5, .max_pool = true, .decode_interval = 4};
    auto d = driver(rule, {.num_layers = 2, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8});
    EvictingCacheManager& cache = cache_of(*d);
    std::vector<int32_t> len = {70, 33};
    const TokenData data(*d, 2, 110, 9);
    prefill(*d, data, len, 16);
    std::vector<std::vector<std::vector<int32_t>>> resident(2);  // [seq][layer] positions
    for (int32_t i = 0; i < 2; ++i) {
        for (int32_t l = 0; l < 2; ++l) {
            const std::vector<int32_t> prompt = first_positions(len[i]);
            resident[i].push_back(len[i] <= rule.budget
                                      ? prompt
                                      : expect_kept(*d, data, rule.keep(), i, l, prompt, len[i]));
        }
    }
    int32_t compactions = 0;
    for (int32_t step = 0; step < 30; ++step) {
        const auto outs = decode(*d, data, len);
        for (int32_t i = 0; i < 2; ++i) {
            for (int32_t l = 0; l < 2; ++l) {
                std::vector<int32_t>& r = resident[i][l];
                r.push_back(len[i]);
                expect_reads(*d, data, outs, i, i, l, len[i], r);
                if (static_cast<int32_t>(r.size()) > rule.budget + rule.decode_interval) {
                    r = expect_kept(*d, data, rule.keep(), i, l, r, len[i] + 1);
                    EXPECT_EQ(r.size(), static_cast<size_t>(rule.budget));
                    ++compactions;
                }
                EXPECT_EQ(positions(cache, i + 1, l), r);
                EXPECT_EQ(static_cast<int64_t>(cache.kv().block_table(i + 1, cache.lane(l)).size()),
                          (static_cast<int64_t>(r.size()) + 15) / 16);
            }
            ++len[i];
        }
    }
    // Seq 0: steps 5, 10, ..., 30; seq 1 from 45 entries on (step 12): 12, 17, 22, 27; two layers.
    EXPECT_EQ(compactions, 2 * (6 + 4));
}

TEST(SnapDecodeTest, ReEvictionNeverMixesSequences) {
    // On the dummy model, end to end: with decode re-eviction (every 4th step once full) each
    // prompt of a ragged batch in chunks of 16 decodes exactly as it does alone in chunks of 32,
    // and the small budget really changes the output.
    const nlohmann::json knobs = {
        {"budget", 48}, {"window", 8}, {"sink", 2}, {"kernel", 5}, {"decode_interval", 3}};
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t len : {70, 23, 101}) prompts.push_back(random_tokens(50 + len, len, 96));
    auto batched_harness = MethodHarness::create("snapkv", knobs);
    ASSERT_TRUE(batched_harness.ok()) << batched_harness.status().to_string();
    const HarnessRun batched = (*batched_harness)->run(prompts, 16, 24);
    for (size_t i = 0; i < prompts.size(); ++i) {
        const HarnessRun alone =
            (*MethodHarness::create("snapkv", knobs))->run({prompts[i]}, 32, 24);
        EXPECT_EQ(alone.logits[0], batched.logits[i]) << "prompt " << i;
    }
    const HarnessRun dense =
        (*MethodHarness::create("snapkv", {{"budget", 4096}}))->run(prompts, 16, 24);
    EXPECT_NE(dense.logits[0], batched.logits[0]);
}

TEST(SnapOracleTest, ARequestFitsOnlyIfItsWholePromptFits) {
    // 16 MiB of 2 KiB blocks (8192) over 2 layers hold 65536 tokens. The prompt is resident in
    // full until its last chunk is compacted, and the oracle is not told the prompt's length, so
    // with or without decode re-eviction a request fits only if all its tokens do.
    const DriverOptions options{.num_layers = 2, .num_heads = 8, .num_kv_heads = 2, .head_dim = 8};
    Rule rule{.budget = 40, .window = 8, .sink = 3, .kernel = 5, .max_pool = true};
    auto plain = driver(rule, options);
    EXPECT_TRUE(plain->method().cache->oracle().fits_alone(65536));
    EXPECT_FALSE(plain->method().cache->oracle().fits_alone(65537));
    rule.decode_interval = 4;
    auto reevicting = driver(rule, options);
    EXPECT_TRUE(reevicting->method().cache->oracle().fits_alone(65536));
    EXPECT_FALSE(reevicting->method().cache->oracle().fits_alone(65537));
}

TEST(SnapKnobsTest, ErrorsNameTheKnob) {
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {{{"budget", 36}, {"sink", 4}, {"window", 32}}, "'budget'"},
        {{{"budget", 0}}, "'budget'"},
        {{{"window", 0}}, "'window'"},
        {{{"sink", -1}}, "'sink'"},
        {{{"kernel", 4}}, "'kernel'"},
        {{{"pooling", "median"}}, "'pooling'"},
        {{{"decode_interval", -1}}, "'decode_interval'"},
        {{{"decode_intervals", 1}}, "'decode_intervals'"},
    };
    for (const auto& [knobs, name] : cases) {
        auto d = ContractDriver::create("snapkv", knobs);
        ASSERT_FALSE(d.ok()) << knobs.dump();
        EXPECT_NE(d.status().message().find(name), std::string::npos) << d.status().to_string();
    }
    // The defaults leave budgets down to 37 valid (sink 4 + window 32 + 1 selected).
    EXPECT_TRUE(ContractDriver::create("snapkv", {{"budget", 37}}).ok());
    EXPECT_FALSE(ContractDriver::create("snapkv", {{"budget", 36}}).ok());
}

}  // namespace
}  // namespace se::testing
