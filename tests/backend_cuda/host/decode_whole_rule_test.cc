// Which decode launches take whole sequences (decode_whole_rule.h), checked on the CPU: one block
// per (sequence, KV head) where those blocks fill between 31/32 of the SMs and all of them, or, two
// blocks an SM, one or two waves of 2 x SMs whose last is at least 15/16 full, at contexts that
// round to [kDecodeWholeMinLen, kDecodeWholeMaxLen].
#include "backend/cuda/decode_whole_rule.h"

#include <gtest/gtest.h>

namespace se::cuda {
namespace {

constexpr int32_t kH200Sms = 132;

TEST(DecodeWholeRule, TheBenchmarksShapes) {
    EXPECT_TRUE(decode_whole_sequences(16, 32768, 8, kH200Sms));  // 128 blocks on 132 SMs
    EXPECT_TRUE(decode_whole_sequences(16, 4224, 8, kH200Sms));   // gpu-dense's batch-16 step
    EXPECT_TRUE(decode_whole_two_per_sm(64, 8192, 8, kH200Sms));  // 512: 264 + 248 slots
    EXPECT_FALSE(decode_whole_one_wave(64, 8192, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_sequences(8, 131072, 8, kH200Sms));  // past a block's table
    EXPECT_FALSE(decode_whole_sequences(1, 32768, 8, kH200Sms));   // 8 blocks
}

TEST(DecodeWholeRule, BlocksBetweenThirtyOneThirtySecondsOfTheSmsAndAllOfThem) {
    // 132 * 31 / 32 = 127.9: 16 x 8 = 128 blocks take them; 15 x 8 = 120 (slower, measured) and
    // 17 x 8 = 136 (two waves) do not.
    EXPECT_TRUE(decode_whole_sequences(16, 16384, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_sequences(15, 16384, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_sequences(17, 16384, 8, kH200Sms));
    EXPECT_TRUE(decode_whole_sequences(33, 16384, 4, kH200Sms));  // 132 blocks
    EXPECT_FALSE(decode_whole_sequences(0, 16384, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_sequences(16, 16384, 0, kH200Sms));
    EXPECT_FALSE(decode_whole_sequences(16, 16384, 8, 0));
}

TEST(DecodeWholeRule, ContextsRoundedAsTheOtherRules) {
    EXPECT_FALSE(decode_whole_sequences(16, kDecodeWholeMinLen / 2, 8, kH200Sms));
    EXPECT_TRUE(decode_whole_sequences(16, kDecodeWholeMinLen / 2 + 1, 8, kH200Sms));  // rounds up
    EXPECT_TRUE(decode_whole_sequences(16, kDecodeWholeMaxLen, 8, kH200Sms));
    // A graph bucket past 32K rounds to 64K: partitions or the balanced split.
    EXPECT_FALSE(decode_whole_sequences(16, kDecodeWholeMaxLen + 1, 8, kH200Sms));
}

TEST(DecodeWholeRule, TwoBlocksAnSmInWavesWhoseLastIsAlmostFull) {
    EXPECT_TRUE(decode_whole_two_per_sm(64, 4224, 8, kH200Sms));   // gpu-dense's batch-64 step
    EXPECT_TRUE(decode_whole_two_per_sm(32, 16384, 8, kH200Sms));  // 256 of 264 slots
    EXPECT_TRUE(decode_whole_two_per_sm(33, 16384, 8, kH200Sms));  // 264: one full wave
    EXPECT_TRUE(decode_whole_two_per_sm(66, 16384, 8, kH200Sms));  // 528: two full waves
    // 384 blocks leave 120 for the second wave (slower than the balanced split, measured); 504
    // leave 240 (< 15/16 of 264); 536 are a third wave.
    EXPECT_FALSE(decode_whole_two_per_sm(48, 8192, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_two_per_sm(63, 8192, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_two_per_sm(67, 8192, 8, kH200Sms));
    // One wave of one block an SM is the other rule's; neither takes contexts outside its range.
    EXPECT_FALSE(decode_whole_two_per_sm(16, 32768, 8, kH200Sms));
    EXPECT_TRUE(decode_whole_one_wave(16, 32768, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_two_per_sm(64, kDecodeWholeMinLen / 2, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_two_per_sm(64, kDecodeWholeMaxLen + 1, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_two_per_sm(0, 8192, 8, kH200Sms));
    EXPECT_FALSE(decode_whole_two_per_sm(64, 8192, 8, 0));
    // No launch takes both.
    for (int32_t seqs = 1; seqs <= 80; ++seqs) {
        EXPECT_FALSE(decode_whole_one_wave(seqs, 8192, 8, kH200Sms) &&
                     decode_whole_two_per_sm(seqs, 8192, 8, kH200Sms))
            << seqs;
    }
}

}  // namespace
}  // namespace se::cuda
