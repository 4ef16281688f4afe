// The GEMV's per-SM cap for launches of few tiles (gemv_occupancy.h), checked on the CPU: the cap
// is the launch's wave count up to two waves, and the shared memory asked for lets exactly that
// many CTAs share an SM (counted the way the hardware counts: footprint = static + dynamic +
// reserved, as many as fit in the SM's shared memory).
#include "backend/cuda/gemv_occupancy.h"

#include <gtest/gtest.h>

namespace se::cuda {
namespace {

constexpr SmSharedMemory kH200{.per_sm = 233472, .reserved_per_cta = 1024, .max_per_cta = 232448};
constexpr SmSharedMemory kA100{.per_sm = 167936, .reserved_per_cta = 1024, .max_per_cta = 166912};
constexpr int64_t kStatic = 4096;  // the GEMV's cross-warp partial sums at m <= 8

int64_t ctas_that_fit(int64_t dynamic, const SmSharedMemory& sm) {
    return sm.per_sm / (kStatic + dynamic + sm.reserved_per_cta);
}

TEST(GemvOccupancy, CapIsTheWaveCountOfShortLaunches) {
    EXPECT_EQ(gemv_ctas_per_sm_cap(256, 132, 2), 2);  // 8B o and down: 4096 / 16 tiles
    EXPECT_EQ(gemv_ctas_per_sm_cap(264, 132, 2), 2);
    EXPECT_EQ(gemv_ctas_per_sm_cap(265, 132, 2), 0);  // three waves: left to the hardware
    EXPECT_EQ(gemv_ctas_per_sm_cap(384, 132, 2), 0);  // q|k|v
    EXPECT_EQ(gemv_ctas_per_sm_cap(132, 132, 2), 1);
    EXPECT_EQ(gemv_ctas_per_sm_cap(1, 132, 2), 1);
    EXPECT_EQ(gemv_ctas_per_sm_cap(36, 132, 2), 1);  // a 135M model's 576 rows
    EXPECT_EQ(gemv_ctas_per_sm_cap(0, 132, 2), 0);
    EXPECT_EQ(gemv_ctas_per_sm_cap(256, 0, 2), 0);
    EXPECT_EQ(gemv_ctas_per_sm_cap(256, 132, 1), 0);
}

TEST(GemvOccupancy, SharedMemoryAdmitsExactlyTheCap) {
    for (const SmSharedMemory& sm : {kH200, kA100}) {
        for (int64_t cap = 1; cap <= 4; ++cap) {
            const int64_t dynamic = gemv_dynamic_smem(cap, kStatic, sm);
            ASSERT_GT(dynamic, 0) << "cap " << cap;
            EXPECT_EQ(ctas_that_fit(dynamic, sm), cap) << "cap " << cap << ", " << dynamic << " B";
            EXPECT_LE(dynamic + kStatic, sm.max_per_cta);
        }
    }
}

TEST(GemvOccupancy, NoRequestWithoutACap) {
    EXPECT_EQ(gemv_dynamic_smem(0, kStatic, kH200), 0);
}

TEST(GemvOccupancy, NoRequestWhereTheStaticPartCannotFitTheCap) {
    // Three CTAs of 80 KB of their own cannot share 228 KB: no request makes it three.
    EXPECT_EQ(gemv_dynamic_smem(3, 80 * 1024, kH200), 0);
}

TEST(GemvOccupancy, CarveoutIsTheSmallestThatHoldsTheCtas) {
    constexpr int64_t kPartials = 8192;  // the partial sums at 9..16 rows
    for (const SmSharedMemory& sm : {kH200, kA100}) {
        for (int64_t ctas = 1; ctas <= 4; ++ctas) {
            const int percent = gemv_carveout_percent(ctas, kPartials, sm);
            const int64_t need = ctas * (kPartials + sm.reserved_per_cta);
            EXPECT_GE(percent * sm.per_sm / 100, need) << ctas << " CTAs";
            EXPECT_LT((percent - 1) * sm.per_sm / 100, need) << ctas << " CTAs";
        }
    }
    EXPECT_EQ(gemv_carveout_percent(3, kPartials, kH200), 12);  // 27.6 KB of 228
    EXPECT_EQ(gemv_carveout_percent(2, kPartials, kH200), 8);
}

TEST(GemvOccupancy, CarveoutIsAtMostTheWholeSm) {
    EXPECT_EQ(gemv_carveout_percent(3, 100 * 1024, kH200), 100);
    EXPECT_EQ(gemv_carveout_percent(0, 8192, kH200), 0);
    EXPECT_EQ(gemv_carveout_percent(3, 8192, SmSharedMemory{}), 0);
}

}  // namespace
}  // namespace se::cuda
