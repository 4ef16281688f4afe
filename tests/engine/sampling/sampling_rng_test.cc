#include "engine/sampling/sampling_rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace se {
namespace {

TEST(SamplingRngTest, Splitmix64MatchesPublishedSequence) {
    uint64_t state = 0;
    EXPECT_EQ(splitmix64_next(state), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(splitmix64_next(state), 0x6e789e6aa1b965f4ULL);
    EXPECT_EQ(splitmix64_next(state), 0x06c45d188009454fULL);
}

TEST(SamplingRngTest, Xoshiro256StarStarMatchesPublishedSequence) {
    SamplingRng rng = SamplingRng::from_state({1, 2, 3, 4});
    const std::vector<uint64_t> expected = {11520ULL,
                                            0ULL,
                                            1509978240ULL,
                                            1215971899390074240ULL,
                                            1216172134540287360ULL,
                                            607988272756665600ULL};
    for (const uint64_t value : expected) EXPECT_EQ(rng.next_u64(), value);
}

TEST(SamplingRngTest, SeedExpandsThroughSplitmix64) {
    uint64_t state = 42;
    const std::array<uint64_t, 4> words = {splitmix64_next(state), splitmix64_next(state),
                                           splitmix64_next(state), splitmix64_next(state)};
    SamplingRng seeded(42);
    SamplingRng explicit_state = SamplingRng::from_state(words);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(seeded.next_u64(), explicit_state.next_u64());
}

TEST(SamplingRngTest, DoublesUseTheTop53Bits) {
    SamplingRng a(7);
    SamplingRng b(7);
    for (int i = 0; i < 1000; ++i) {
        const double u = a.next_double();
        EXPECT_EQ(u, static_cast<double>(b.next_u64() >> 11) / 9007199254740992.0);
        EXPECT_GE(u, 0.0);
        EXPECT_LT(u, 1.0);
    }
}

TEST(SamplingRngTest, DoublesAreUniform) {
    SamplingRng rng(123);
    constexpr int kDraws = 100000;
    constexpr int kBins = 10;
    std::vector<int> bins(kBins, 0);
    for (int i = 0; i < kDraws; ++i) ++bins[static_cast<int>(rng.next_double() * kBins)];
    // Each bin is Binomial(n, 0.1): 5 standard deviations is a bound no fixed seed should hit.
    const double sd = std::sqrt(kDraws * 0.1 * 0.9);
    for (const int count : bins) EXPECT_NEAR(count, kDraws / kBins, 5 * sd);
}

TEST(SamplingRngTest, DifferentSeedsGiveDifferentStreams) {
    SamplingRng a(1);
    SamplingRng b(2);
    int equal = 0;
    for (int i = 0; i < 64; ++i) equal += a.next_u64() == b.next_u64() ? 1 : 0;
    EXPECT_EQ(equal, 0);
}

}  // namespace
}  // namespace se
