// ChainCache decisions: created, resumed, invalidated (digest, fingerprint, a prompt no longer
// than the processed tokens), busy, gone, LRU reclamation with ties to the lower id, limits.
#include "kv/chain_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace se {
namespace {

std::vector<int32_t> iota_tokens(int32_t n, int32_t from = 1) {
    std::vector<int32_t> t;
    for (int32_t i = 0; i < n; ++i) t.push_back(from + i);
    return t;
}

ChainCache unlimited() {
    return ChainCache(ChainLimits{}, 1000);
}

TEST(ChainCacheTest, ResumesWhenPrefixAndFingerprintMatch) {
    ChainCache chains = unlimited();
    const std::vector<int32_t> turn1 = iota_tokens(10);
    auto created = chains.begin("a", 7, turn1, 100);
    ASSERT_TRUE(created.ok());
    EXPECT_EQ(created->status, ChainStatus::kCreated);
    EXPECT_EQ(created->seq, 100);
    EXPECT_TRUE(chains.owns("a", 100));
    // Processed: the prompt and all but the last sampled token.
    std::vector<int32_t> history = turn1;
    history.push_back(50);
    EXPECT_TRUE(chains.park("a", history, 3, 1).empty());
    EXPECT_FALSE(chains.owns("a", 100));

    std::vector<int32_t> turn2 = history;
    turn2.insert(turn2.end(), {51, 52, 53});
    auto resumed = chains.begin("a", 7, turn2, 200);
    ASSERT_TRUE(resumed.ok());
    EXPECT_EQ(resumed->status, ChainStatus::kResumed);
    EXPECT_EQ(resumed->seq, 100);  // the owner's state continues
    EXPECT_EQ(resumed->reused_tokens, 11);
    EXPECT_FALSE(resumed->release.has_value());
    EXPECT_TRUE(chains.owns("a", 100));
    EXPECT_EQ(chains.stats().num_resumed, 1);
}

TEST(ChainCacheTest, MismatchInvalidatesAndReleasesTheOldState) {
    struct Case {
        const char* what;
        uint64_t fingerprint;
        std::vector<int32_t> prompt;
    };
    const std::vector<int32_t> processed = iota_tokens(12);
    std::vector<int32_t> edited = processed;
    edited[5] = 99;
    edited.push_back(1);
    std::vector<int32_t> longer = processed;
    longer.push_back(1);
    const std::vector<Case> cases = {
        {"a token inside the processed prefix differs", 7, edited},
        {"the fingerprint differs (other knobs or salt)", 8, longer},
        {"the prompt adds nothing after the processed tokens", 7, processed},
        {"the prompt is shorter than the processed tokens", 7, iota_tokens(4)},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        ChainCache chains = unlimited();
        ASSERT_TRUE(chains.begin("a", 7, iota_tokens(5), 1).ok());
        chains.park("a", processed, 2, 1);
        auto start = chains.begin("a", c.fingerprint, c.prompt, 2);
        ASSERT_TRUE(start.ok());
        EXPECT_EQ(start->status, ChainStatus::kInvalidated);
        EXPECT_EQ(start->seq, 2);  // runs from scratch under its own id
        EXPECT_EQ(start->reused_tokens, 0);
        ASSERT_TRUE(start->release.has_value());
        EXPECT_EQ(*start->release, 1);
        EXPECT_TRUE(chains.owns("a", 2));
    }
}

TEST(ChainCacheTest, TranscriptOfTheLastTurnWhileIdle) {
    ChainCache chains = unlimited();
    ASSERT_TRUE(chains.begin("a", 7, iota_tokens(6), 100).ok());
    EXPECT_EQ(chains.transcript("a").status().code(), StatusCode::kFailedPrecondition);  // busy
    const std::vector<int32_t> turn = iota_tokens(8);  // prompt + 2 generated tokens
    chains.park("a", std::span(turn).first(7), 1, 1, turn);
    auto transcript = chains.transcript("a");
    ASSERT_TRUE(transcript.ok());
    EXPECT_EQ(transcript.value(), turn);  // the last sampled token too
    EXPECT_EQ(chains.transcript("b").status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(chains.reclaim_lru().has_value());
    EXPECT_EQ(chains.transcript("a").status().code(), StatusCode::kGone);
}

TEST(ChainCacheTest, BusyWhileActive) {
    ChainCache chains = unlimited();
    ASSERT_TRUE(chains.begin("a", 7, iota_tokens(5), 1).ok());
    auto busy = chains.begin("a", 7, iota_tokens(6), 2);
    ASSERT_FALSE(busy.ok());
    EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(busy.status().message().find("busy"), std::string::npos);
    EXPECT_TRUE(chains.owns("a", 1));  // the running owner is untouched
}

TEST(ChainCacheTest, ReclaimsLeastRecentlyUsedWithTiesToTheLowerId) {
    ChainCache chains = unlimited();
    // Parked at times 5, 3, 3, 9: order of reclamation b, c (tie at 3: "b" < "c"), a, d.
    const std::vector<std::pair<std::string, int64_t>> parked = {
        {"a", 5}, {"c", 3}, {"b", 3}, {"d", 9}};
    SeqId seq = 1;
    std::map<std::string, SeqId> owner;
    for (const auto& [id, now] : parked) {
        ASSERT_TRUE(chains.begin(id, 7, iota_tokens(4), seq).ok());
        owner[id] = seq++;
        chains.park(id, iota_tokens(4), 1, now);
    }
    ASSERT_TRUE(chains.begin("e", 7, iota_tokens(4), seq).ok());  // ACTIVE: never reclaimed
    std::vector<SeqId> order;
    while (auto o = chains.reclaim_lru()) order.push_back(*o);
    EXPECT_EQ(order, (std::vector<SeqId>{owner["b"], owner["c"], owner["a"], owner["d"]}));
    EXPECT_TRUE(chains.owns("e", seq));
    EXPECT_EQ(chains.stats().num_reclaimed, 4);
    for (const auto& [id, now] : parked) {
        auto again = chains.begin(id, 7, iota_tokens(6), 99);
        ASSERT_FALSE(again.ok());
        EXPECT_EQ(again.status().code(), StatusCode::kGone) << id;
    }
}

TEST(ChainCacheTest, ParkingPastTheCountLimitReclaimsTheOldest) {
    ChainCache chains(ChainLimits{.max_idle_chains = 2, .max_idle_pool_fraction = 1.0}, 1000);
    for (SeqId s = 1; s <= 3; ++s) {
        const std::string id = "c" + std::to_string(s);
        ASSERT_TRUE(chains.begin(id, 7, iota_tokens(4), s).ok());
        const std::vector<SeqId> reclaimed = chains.park(id, iota_tokens(4), 1, s);
        EXPECT_EQ(reclaimed, s == 3 ? std::vector<SeqId>{1} : std::vector<SeqId>{});
    }
    EXPECT_EQ(chains.stats().num_idle, 2);
    EXPECT_EQ(chains.begin("c1", 7, iota_tokens(6), 9).status().code(), StatusCode::kGone);
}

TEST(ChainCacheTest, ParkingPastThePoolFractionReclaimsUntilUnder) {
    // 100 blocks, idle chains may hold 50: chains of 30, 15, then 20 (65 > 50) drop the first.
    ChainCache chains(ChainLimits{.max_idle_chains = -1, .max_idle_pool_fraction = 0.5}, 100);
    const std::vector<int64_t> blocks = {30, 15, 20};
    for (SeqId s = 1; s <= 3; ++s) {
        const std::string id = "c" + std::to_string(s);
        ASSERT_TRUE(chains.begin(id, 7, iota_tokens(4), s).ok());
        const std::vector<SeqId> reclaimed = chains.park(id, iota_tokens(4), blocks[s - 1], s);
        EXPECT_EQ(reclaimed, s == 3 ? std::vector<SeqId>{1} : std::vector<SeqId>{});
    }
    EXPECT_EQ(chains.stats().idle_blocks, 35);
    // A chain larger than the whole allowance is reclaimed as soon as it parks.
    ASSERT_TRUE(chains.begin("big", 7, iota_tokens(4), 4).ok());
    const std::vector<SeqId> reclaimed = chains.park("big", iota_tokens(4), 60, 9);
    EXPECT_EQ(reclaimed, (std::vector<SeqId>{2, 3, 4}));
    EXPECT_EQ(chains.stats().num_idle, 0);
}

TEST(ChainCacheTest, InvalidateAndDropForgetTheRecord) {
    ChainCache chains = unlimited();
    ASSERT_TRUE(chains.begin("a", 7, iota_tokens(4), 1).ok());
    chains.invalidate("a");  // the owner was preempted or cancelled
    EXPECT_FALSE(chains.owns("a", 1));
    auto fresh = chains.begin("a", 7, iota_tokens(4), 2);
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(fresh->status, ChainStatus::kCreated);  // not gone: nothing was reclaimed

    EXPECT_EQ(chains.drop("a").status().code(), StatusCode::kFailedPrecondition);  // ACTIVE
    chains.park("a", iota_tokens(4), 1, 1);
    auto dropped = chains.drop("a");
    ASSERT_TRUE(dropped.ok());
    EXPECT_EQ(*dropped, 2);
    EXPECT_EQ(chains.drop("a").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(chains.begin("a", 7, iota_tokens(4), 3)->status, ChainStatus::kCreated);
}

TEST(ChainCacheTest, ALostOwnerKeepsTheChainBusyThenIsForgotten) {
    ChainCache chains = unlimited();
    ASSERT_TRUE(chains.begin("a", 7, iota_tokens(4), 1).ok());
    chains.mark_lost("a");  // the owner was preempted and recomputes
    EXPECT_TRUE(chains.lost("a"));
    EXPECT_TRUE(chains.owns("a", 1));
    EXPECT_EQ(chains.begin("a", 7, iota_tokens(6), 2).status().code(),
              StatusCode::kFailedPrecondition);
    chains.invalidate("a");  // it ended: the engine forgets instead of parking
    EXPECT_EQ(chains.stats().num_invalidated, 1);
    EXPECT_EQ(chains.begin("a", 7, iota_tokens(6), 3)->status, ChainStatus::kCreated);
}

}  // namespace
}  // namespace se
