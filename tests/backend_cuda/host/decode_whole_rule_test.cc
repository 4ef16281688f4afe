// Which decode launches take whole sequences (decode_whole_rule.h), checked on the CPU: one block
// per (sequence, KV head) where those blocks fill between 31/32 of the SMs and all of them, at
// contexts that round to [kDecodeWholeMinLen, kDecodeWholeMaxLen].
#include "backend/cuda/decode_whole_rule.h"

#include <gtest/gtest.h>

namespace se::cuda {
namespace {

constexpr int32_t kH200Sms = 132;

TEST(DecodeWholeRule, TheBenchmarksOneWaveShapeTakesWholeSequences) {
    EXPECT_TRUE(decode_whole_sequences(16, 32768, 8, kH200Sms));   // 128 blocks on 132 SMs
    EXPECT_TRUE(decode_whole_sequences(16, 4224, 8, kH200Sms));    // gpu-dense's batch-16 step
    EXPECT_FALSE(decode_whole_sequences(64, 8192, 8, kH200Sms));   // four waves
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

}  // namespace
}  // namespace se::cuda
