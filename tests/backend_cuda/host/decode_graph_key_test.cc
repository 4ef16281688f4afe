// Which steps run as CUDA graphs and under which key (decode_graph_key.h), the staging trace a
// replay is checked with (staging_trace.h) and the bounded graph cache (keyed_lru.h), on the CPU.
#include "backend/cuda/decode_graph_key.h"

#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/decode_partition.h"
#include "backend/cuda/keyed_lru.h"
#include "backend/cuda/staging_trace.h"

namespace se::cuda {
namespace {

constexpr int32_t kMaxModelLen = 8192;
constexpr int32_t kMaxSeqs = 256;

StepShape decode(int32_t num_seqs, int32_t max_kv_len) {
    return {.num_tokens = num_seqs, .num_seqs = num_seqs, .max_kv_len = max_kv_len, .decode = true};
}

TEST(DecodeGraphKey, BucketIsTheNextPowerOfTwoFrom256) {
    EXPECT_EQ(decode_kv_bucket(1, kMaxModelLen), 256);
    EXPECT_EQ(decode_kv_bucket(256, kMaxModelLen), 256);
    EXPECT_EQ(decode_kv_bucket(257, kMaxModelLen), 512);
    EXPECT_EQ(decode_kv_bucket(1000, kMaxModelLen), 1024);
    EXPECT_EQ(decode_kv_bucket(4097, kMaxModelLen), 8192);
    EXPECT_EQ(decode_kv_bucket(8192, kMaxModelLen), 8192);
}

TEST(DecodeGraphKey, BucketStopsAtMaxModelLen) {
    EXPECT_EQ(decode_kv_bucket(100, 200), 200);
    EXPECT_EQ(decode_kv_bucket(5000, 6000), 6000);
    EXPECT_EQ(decode_kv_bucket(4096, 6000), 4096);
}

TEST(DecodeGraphKey, TableStrideCoversMaxModelLen) {
    EXPECT_EQ(decode_table_stride(8192, 16), 512);
    EXPECT_EQ(decode_table_stride(8193, 16), 513);
    EXPECT_EQ(decode_table_stride(100, 32), 4);
}

TEST(DecodeGraphKey, DecodeStepsGetAKey) {
    const auto key = decode_graph_key(decode(5, 300), kMaxModelLen, kMaxSeqs);
    ASSERT_TRUE(key.has_value());
    EXPECT_EQ(key->num_tokens, 5);
    EXPECT_EQ(key->kv_bucket, 512);
    // Lengths within one bucket share the key; the next bucket does not.
    EXPECT_EQ(decode_graph_key(decode(5, 257), kMaxModelLen, kMaxSeqs), key);
    EXPECT_EQ(decode_graph_key(decode(5, 512), kMaxModelLen, kMaxSeqs), key);
    EXPECT_NE(decode_graph_key(decode(5, 513), kMaxModelLen, kMaxSeqs), key);
    EXPECT_NE(decode_graph_key(decode(4, 300), kMaxModelLen, kMaxSeqs), key);
}

TEST(DecodeGraphKey, OtherStepsRunEagerly) {
    StepShape prefill = decode(5, 300);
    prefill.decode = false;
    EXPECT_FALSE(decode_graph_key(prefill, kMaxModelLen, kMaxSeqs));
    StepShape mixed = decode(5, 300);
    mixed.num_tokens = 7;
    EXPECT_FALSE(decode_graph_key(mixed, kMaxModelLen, kMaxSeqs));
    EXPECT_FALSE(decode_graph_key(decode(0, 0), kMaxModelLen, kMaxSeqs));
    EXPECT_FALSE(decode_graph_key(decode(kMaxSeqs + 1, 300), kMaxModelLen, kMaxSeqs));
    EXPECT_FALSE(decode_graph_key(decode(5, kMaxModelLen + 1), kMaxModelLen, kMaxSeqs));
    EXPECT_FALSE(decode_graph_key(StepShape{}, kMaxModelLen, kMaxSeqs));
}

// The bucket stands for max_kv_len in decode attention: the workspace allocated at start-up for
// max_model_len covers it, and every batch keeps the exact length's partition size, since the rule
// rounds the length up as the bucket does (the GPU test compares graph and eager logits bit for
// bit at 6 sequences).
TEST(DecodeGraphKey, BucketKeepsThePartition) {
    // 3000: the last bucket is max_model_len itself, not a power of two.
    for (int32_t max_model_len : {kMaxModelLen, 3000}) {
        for (int32_t num_seqs : {1, 2, 3, 4, 5, 6, 7, 8, 16, 31, 32, 64, 200, kMaxSeqs}) {
            for (int32_t len = 1; len <= max_model_len; len += 37) {
                EXPECT_EQ(decode_partition_size(num_seqs, decode_kv_bucket(len, max_model_len)),
                          decode_partition_size(num_seqs, len))
                    << num_seqs << " x " << len << " of " << max_model_len;
            }
        }
    }
    for (int32_t num_seqs : {1, 64, kMaxSeqs}) {
        for (int32_t len : {1, 300, 5000, kMaxModelLen}) {
            EXPECT_LE(decode_max_partition_rows(num_seqs, decode_kv_bucket(len, kMaxModelLen)),
                      decode_max_partition_rows(kMaxSeqs, kMaxModelLen));
        }
    }
}

TEST(StagingTrace, EqualTracesHaveNoDifference) {
    StagingTrace a;
    StagingTrace b;
    EXPECT_EQ(a.first_difference(b), "");
    a.add(0, 20);
    a.add(256, 40);
    b.add(0, 20);
    b.add(256, 40);
    EXPECT_EQ(a.first_difference(b), "");
    a.clear();
    EXPECT_TRUE(a.entries().empty());
}

TEST(StagingTrace, NamesTheFirstDifference) {
    StagingTrace want;
    want.add(0, 20);
    want.add(256, 40);
    StagingTrace got;
    got.add(0, 20);
    got.add(256, 44);
    EXPECT_EQ(got.first_difference(want),
              "staging entry 1: 44 bytes at offset 256 where 40 bytes at offset 256 was expected");
    StagingTrace shorter;
    shorter.add(0, 20);
    EXPECT_EQ(shorter.first_difference(want),
              "staging entry 1: none (1 entries) where 40 bytes at offset 256 was expected");
    EXPECT_EQ(want.first_difference(shorter),
              "staging entry 1: 40 bytes at offset 256 where none (1 entries) was expected");
}

TEST(KeyedLru, FindsWhatWasInserted) {
    KeyedLru<int, std::string> lru(2);
    EXPECT_EQ(lru.find(1), nullptr);
    lru.insert(1, "one");
    ASSERT_NE(lru.find(1), nullptr);
    EXPECT_EQ(*lru.find(1), "one");
    EXPECT_TRUE(lru.contains(1));
    EXPECT_FALSE(lru.contains(2));
    EXPECT_EQ(lru.size(), 1u);
}

TEST(KeyedLru, EvictsTheLeastRecentlyUsed) {
    KeyedLru<int, int> lru(3);
    lru.insert(1, 10);
    lru.insert(2, 20);
    lru.insert(3, 30);
    ASSERT_NE(lru.find(1), nullptr);  // 2 is now the least recently used
    lru.insert(4, 40);
    EXPECT_EQ(lru.size(), 3u);
    EXPECT_FALSE(lru.contains(2));
    EXPECT_TRUE(lru.contains(1));
    EXPECT_TRUE(lru.contains(3));
    EXPECT_TRUE(lru.contains(4));
    lru.insert(5, 50);  // then 3
    EXPECT_FALSE(lru.contains(3));
    lru.clear();
    EXPECT_EQ(lru.size(), 0u);
}

TEST(KeyedLru, WorksWithGraphKeys) {
    KeyedLru<DecodeGraphKey, int> lru(64);
    for (int32_t n = 1; n <= 100; ++n) lru.insert({.num_tokens = n, .kv_bucket = 256}, n);
    EXPECT_EQ(lru.size(), 64u);
    EXPECT_FALSE(lru.contains({.num_tokens = 36, .kv_bucket = 256}));
    EXPECT_TRUE(lru.contains({.num_tokens = 37, .kv_bucket = 256}));
}

}  // namespace
}  // namespace se::cuda
