// MirroredCacheManager: state-changing calls reach every rank and their answers are compared;
// the oracle answers for the tightest rank; a chain's retained state is compared by digest.
#include "sparse/mirrored_cache_manager.h"

#include <gtest/gtest.h>

#include <map>

namespace se {
namespace {

// A rank's cache manager whose answers a test sets.
class FakeCache final : public CacheManager, public MemoryOracle {
  public:
    CacheCapacity cap{.num_blocks = 100, .num_free_blocks = 60, .block_size = 16};
    int64_t available = 60, step = 1, gain = 5;
    bool fits = true;
    int32_t hit = 32;
    std::map<int32_t, std::vector<int32_t>> positions;  // [layer] resident positions
    int calls = 0;                                      // state-changing calls seen

    CacheCapacity capacity() const override { return cap; }
    const MemoryOracle& oracle() const override { return *this; }
    int32_t attach_prefix(SeqId, const PrefixQuery&) override { return ++calls, hit; }
    void publish_prefix(SeqId, const PrefixQuery&) override { ++calls; }
    Status prepare_step(const StepPlan&) override { return ++calls, Status(); }
    void store(int32_t, const ConstTensorView&, const ConstTensorView&) override {}
    AttentionView view(int32_t, const Selection&) override { return {}; }
    std::vector<PayloadKind> payload_kinds() const override { return {PayloadKind::kPagedDense}; }
    void release(SeqId) override { ++calls; }
    void flush_prefix_cache() override { ++calls; }
    RadixCacheStats prefix_cache_stats() const override { return {}; }
    bool resident_keys(SeqId, int32_t layer, ResidentKeys& out) const override {
        auto it = positions.find(layer);
        if (it == positions.end()) return false;
        out.positions = it->second;
        return true;
    }

    int64_t available_blocks() const override { return available; }
    bool fits_alone(int64_t) const override { return fits; }
    AdmissionCost admission_cost(const PrefixQuery&, int32_t) const override {
        return {.hit_tokens = hit, .first_chunk = 16, .blocks = step};
    }
    int64_t step_cost(SeqId, int32_t) const override { return step; }
    int64_t release_gain(SeqId) const override { return gain; }
};

struct Ranks {
    explicit Ranks(int32_t n) {
        std::vector<std::unique_ptr<CacheManager>> caches;
        for (int32_t r = 0; r < n; ++r) {
            auto cache = std::make_unique<FakeCache>();
            fakes.push_back(cache.get());
            caches.push_back(std::move(cache));
        }
        mirrored = std::make_unique<MirroredCacheManager>(std::move(caches));
    }
    std::vector<FakeCache*> fakes;
    std::unique_ptr<MirroredCacheManager> mirrored;
};

TEST(MirroredCacheManagerTest, StateChangesReachEveryRank) {
    Ranks ranks(3);
    EXPECT_EQ(ranks.mirrored->attach_prefix(1, {}), 32);
    ranks.mirrored->publish_prefix(1, {});
    ranks.mirrored->release(1);
    ranks.mirrored->flush_prefix_cache();
    EXPECT_TRUE(ranks.mirrored->prepare_step({}).ok());
    for (FakeCache* f : ranks.fakes) EXPECT_EQ(f->calls, 5);
}

TEST(MirroredCacheManagerTest, TheOracleAnswersForTheTightestRank) {
    Ranks ranks(3);
    ranks.fakes[1]->available = 40;
    ranks.fakes[2]->step = 3;
    ranks.fakes[0]->gain = 2;
    ranks.fakes[1]->cap.num_free_blocks = 10;
    const MemoryOracle& oracle = ranks.mirrored->oracle();
    EXPECT_EQ(oracle.available_blocks(), 40);
    EXPECT_EQ(oracle.step_cost(1, 1), 3);
    EXPECT_EQ(oracle.admission_cost({}, 16).blocks, 3);
    EXPECT_EQ(oracle.release_gain(1), 2);
    EXPECT_TRUE(oracle.fits_alone(10));
    ranks.fakes[2]->fits = false;
    EXPECT_FALSE(oracle.fits_alone(10));
    EXPECT_EQ(ranks.mirrored->capacity().num_free_blocks, 10);
}

TEST(MirroredCacheManagerTest, AChainsStateIsComparedByDigest) {
    Ranks ranks(2);
    for (FakeCache* f : ranks.fakes) f->positions = {{0, {0, 1, 5}}, {1, {0, 2, 5}}};
    EXPECT_TRUE(ranks.mirrored->ranks_agree_on(1, 2));
    ranks.fakes[1]->positions[1] = {0, 3, 5};  // rank 1 kept another entry in layer 1
    EXPECT_FALSE(ranks.mirrored->ranks_agree_on(1, 2));
    EXPECT_TRUE(ranks.mirrored->ranks_agree_on(1, 1));  // layer 0 alone still agrees
    ranks.fakes[1]->positions[1] = {0, 2, 5};
    ranks.fakes[1]->gain = 6;  // or holds another block count
    EXPECT_FALSE(ranks.mirrored->ranks_agree_on(1, 2));
}

TEST(MirroredCacheManagerDeathTest, RanksThatDivergeStopTheProcessNamingTheOperation) {
    Ranks ranks(2);
    ranks.fakes[1]->hit = 16;
    EXPECT_DEATH(ranks.mirrored->attach_prefix(1, {}), "diverged");
    Ranks pools(2);
    pools.fakes[1]->cap.num_blocks = 99;
    EXPECT_DEATH(pools.mirrored->capacity(), "KV pool");
}

}  // namespace
}  // namespace se
