// The dense method's cache manager: storage per step, the prefix cache, and a memory oracle
// whose answers are exact and change nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <span>
#include <variant>

#include "backend/cpu/cpu_ops.h"
#include "sparse/method_registry.h"

namespace se {
namespace {

constexpr int32_t kBs = 4;

class FullCacheManagerTest : public ::testing::Test {
  protected:
    FullCacheManagerTest() {
        config_.num_layers = 2;
        config_.num_kv_heads = 1;
        config_.head_dim = 8;
        auto method = builtin_methods().create(
            "dense", {.model = config_,
                      .ops = ops_,
                      .kv_layout = {.dtype = DType::kF32,
                                    .block_size = kBs,
                                    .num_kv_heads = 1,
                                    .head_dim = 8},
                      .kv_cache_bytes = 10 * 2 * 2 * kBs * 8 * 4,  // 10 blocks
                      .knobs = knobs_,
                      .enable_prefix_caching = true});
        SE_CHECK(method.ok(), "%s", method.status().to_string().c_str());
        method_ = std::move(method).value();
    }

    CacheManager& cache() { return *method_.cache; }

    // Runs a prefill step of `count` tokens for `seq` after `computed`.
    void prefill(SeqId seq, int32_t computed, int32_t count) {
        StepPlan plan{.phase = StepPhase::kPrefill,
                      .seqs = {{.seq_id = seq,
                                .num_new_tokens = count,
                                .num_computed_tokens = computed,
                                .samples = true}}};
        ASSERT_TRUE(cache().prepare_step(plan).ok());
    }

    ModelConfig config_;
    CpuOps ops_{CpuOptions{.num_threads = 1}};
    nlohmann::json knobs_ = nlohmann::json::object();
    Method method_;
};

TEST_F(FullCacheManagerTest, OracleAnswersMatchWhatHappensAndChangeNothing) {
    std::vector<int32_t> tokens(13);
    for (int i = 0; i < 13; ++i) tokens[i] = 100 + i;
    const PrefixQuery q{.ns = 5, .tokens = tokens};
    const MemoryOracle& oracle = cache().oracle();
    EXPECT_EQ(oracle.available_blocks(), 10);
    EXPECT_TRUE(oracle.fits_alone(40));
    EXPECT_FALSE(oracle.fits_alone(41));

    AdmissionCost cost = oracle.admission_cost(q, 8);
    EXPECT_EQ(cost.hit_tokens, 0);
    EXPECT_EQ(cost.first_chunk, 8);
    EXPECT_EQ(cost.blocks, 2);
    EXPECT_EQ(cache().attach_prefix(1, q), 0);
    prefill(1, 0, 8);
    EXPECT_EQ(oracle.available_blocks(), 8);
    EXPECT_EQ(oracle.step_cost(1, 5), 2);
    prefill(1, 8, 5);
    cache().publish_prefix(1, q);
    EXPECT_EQ(cache().capacity().num_cached_blocks, 3);  // 12 of 13 tokens in whole blocks
    // Sequence 1 still holds all four blocks: releasing it frees one and leaves three to the
    // cache alone (evictable), so all four become available.
    EXPECT_EQ(oracle.release_gain(1), 4);
    cache().release(1);
    EXPECT_EQ(oracle.available_blocks(), 10);

    // A second request with the same 13 tokens may reuse 12 (one token must be computed).
    const CacheCapacity before = cache().capacity();
    const RadixCacheStats stats_before = cache().prefix_cache_stats();
    cost = oracle.admission_cost(q, 16);
    EXPECT_EQ(cost.hit_tokens, 12);
    EXPECT_EQ(cost.first_chunk, 1);
    EXPECT_EQ(cost.blocks, 1 + 3);  // one new block, plus three cached blocks it pins
    const CacheCapacity after = cache().capacity();
    EXPECT_EQ(after.num_free_blocks, before.num_free_blocks);
    EXPECT_EQ(after.num_cached_blocks, before.num_cached_blocks);
    EXPECT_EQ(cache().prefix_cache_stats().num_queries, stats_before.num_queries);

    EXPECT_EQ(cache().attach_prefix(2, q), 12);
    EXPECT_EQ(oracle.available_blocks(), 10 - 3);
    prefill(2, 12, 1);
    EXPECT_EQ(oracle.available_blocks(), 10 - 4);
    cache().release(2);
    cache().flush_prefix_cache();
    EXPECT_EQ(cache().capacity().num_free_blocks, 10);
}

// The plain store of a step (where the model may write its keys and values itself) is where the
// layer's view reads the step's entries: the layer's cache, and for entry j of the sequence
// block_table[j / bs] * bs + j % bs.
TEST_F(FullCacheManagerTest, PlainStoreIsWhereTheViewReadsTheStepsEntries) {
    prefill(1, 0, 6);
    prefill(1, 6, 5);  // entries 6..10: the second block and part of the third
    for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
        const std::optional<PlainKvStore> plain = cache().plain_store(layer);
        ASSERT_TRUE(plain.has_value());
        const AttentionView view = cache().view(layer, Selection::full());
        const auto& read = std::get<PagedKvRead>(view.payload);
        EXPECT_EQ(plain->cache, read.cache);
        ASSERT_EQ(read.seqs.size(), 1u);
        const std::span<const int32_t> table = read.seqs[0].block_table;
        ASSERT_EQ(plain->write.slots.size(), 5u);
        for (int32_t i = 0; i < 5; ++i) {
            const int32_t j = 6 + i;
            EXPECT_EQ(plain->write.slots[i], int64_t{table[j / kBs]} * kBs + j % kBs) << i;
        }
    }
}

TEST_F(FullCacheManagerTest, FailedReservationLeavesEverySequenceUntouched) {
    prefill(1, 0, 16);  // 4 blocks
    prefill(2, 0, 16);  // 4 blocks
    StepPlan plan{.phase = StepPhase::kDecode,
                  .seqs = {{.seq_id = 1, .num_new_tokens = 8, .num_computed_tokens = 16},
                           {.seq_id = 2, .num_new_tokens = 8, .num_computed_tokens = 16}}};
    const Status s = cache().prepare_step(plan);  // needs 4 blocks, 2 free
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(cache().capacity().num_free_blocks, 2);
    // The sequences can still take a step that fits.
    plan.seqs = {{.seq_id = 1, .num_new_tokens = 1, .num_computed_tokens = 16, .samples = true}};
    EXPECT_TRUE(cache().prepare_step(plan).ok());
}

}  // namespace
}  // namespace se
