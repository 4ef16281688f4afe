// cuda::gemv with GemvEpilogue::kSiluMul (the gated MLP's gate and up products and silu_mul in one
// launch) against the unfused path it replaces: the same launch with kStore into separate bf16
// gate and up outputs, then cuda::silu_mul. The fused output must have the same bits: the kernel
// sums every output feature's products in the same order either way (a feature's MMA
// accumulators and the 8 warps' partials do not depend on which rows share its tile) and rounds
// gate and up to bf16 before silu_mul's arithmetic, as the unfused path stores them. The unfused
// path itself is checked against an f64 reference by gemv_test.cc and silu_mul_test.cc.
//
// Outputs are poisoned (0xff bytes): y outside [m, n) and the up storage, which the fused launch
// never writes, must keep the poison's bits.
//
// At one row both paths also run with x's 1 / rms pending (GemvRowScale): the fused launch must
// scale gate and up before their rounding exactly as kStore scales its outputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cuda/gemv.h"
#include "backend/cuda/silu_mul.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload_bf16;

struct GatedProblem {
    int32_t m = 0;
    int64_t n = 0;
    int64_t k = 0;
    int64_t ldy = 0;
    DeviceBuffer x, gate, up;
};

GatedProblem make_problem(int32_t m, int64_t n, int64_t k, int64_t ldy) {
    const auto seed = static_cast<uint32_t>(7000 + 31 * m + n + k);
    return {m,
            n,
            k,
            ldy,
            upload_bf16(testing::random_bf16_values(m * k, seed, -1.0f, 1.0f)),
            upload_bf16(testing::random_bf16_values(n * k, seed + 1, -0.5f, 0.5f)),
            upload_bf16(testing::random_bf16_values(n * k, seed + 2, -0.5f, 0.5f))};
}

GemvParams params_of(const GatedProblem& p, void* gate_y, void* up_y, GemvEpilogue epilogue,
                     const GemvRowScale& scale) {
    GemvParams g{.x = p.x.as<bf16>(),
                 .ldx = p.k,
                 .m = p.m,
                 .k = p.k,
                 .segments = {},
                 .num_segments = 2,
                 .epilogue = epilogue,
                 .x_scale = scale};
    g.segments[0] = {.w = p.gate.as<bf16>(), .y = gate_y, .n = p.n, .ldy = p.ldy};
    g.segments[1] = {.w = p.up.as<bf16>(), .y = up_y, .n = p.n, .ldy = p.ldy};
    return g;
}

// y [m + 1, ldy] of bf16 as allocated: the last row a canary.
size_t y_bytes(const GatedProblem& p) {
    return static_cast<size_t>((p.m + 1) * p.ldy) * 2;
}

// device: the fused launch spaced over the SMs as CudaOps launches it (at most 8 rows and few
// tiles: SmolLM2's q|k|v and gate|up at batch 1), or not (nullptr).
// scale: x's pending 1 / rms (m = 1), or none.
void expect_fused_equals_unfused(const GatedProblem& p, const GemvDevice* device,
                                 const GemvRowScale& scale) {
    const DeviceBuffer gate_y = poisoned(y_bytes(p));
    const DeviceBuffer up_y = poisoned(y_bytes(p));
    const DeviceBuffer want = poisoned(y_bytes(p));
    testing::must_ok(
        gemv(params_of(p, gate_y.data(), up_y.data(), GemvEpilogue::kStore, scale), nullptr));
    testing::must_ok(silu_mul({.gate = gate_y.as<bf16>(),
                               .up = up_y.as<bf16>(),
                               .out = want.as<bf16>(),
                               .in_row_stride = p.ldy,
                               .num_rows = p.m,
                               .cols = static_cast<int32_t>(p.ldy)},
                              nullptr));

    const DeviceBuffer got = poisoned(y_bytes(p));
    const DeviceBuffer untouched = poisoned(y_bytes(p));
    GemvParams fused = params_of(p, got.data(), untouched.data(), GemvEpilogue::kSiluMul, scale);
    fused.device = device;
    testing::must_ok(gemv(fused, nullptr));

    const size_t count = y_bytes(p) / 2;
    const std::vector<uint16_t> got_bits = download<uint16_t>(got, count);
    const std::vector<uint16_t> want_bits = download<uint16_t>(want, count);
    const std::vector<uint16_t> up_bits = download<uint16_t>(untouched, count);
    int failures = 0;
    for (int64_t i = 0; i <= p.m && failures < 10; ++i) {
        for (int64_t j = 0; j < p.ldy && failures < 10; ++j) {
            const size_t at = static_cast<size_t>(i * p.ldy + j);
            const bool written = i < p.m && j < p.n;
            const uint16_t expected = written ? want_bits[at] : uint16_t{0xffff};
            if (got_bits[at] != expected) {
                ADD_FAILURE() << "y[" << i << ", " << j << "] bits " << got_bits[at] << ", want "
                              << expected << (written ? "" : " (outside [m, n): the poison)");
                ++failures;
            }
            if (up_bits[at] != 0xffff) {
                ADD_FAILURE() << "up storage [" << i << ", " << j << "] was written";
                ++failures;
            }
        }
    }
}

// m across both MMA shapes (<= 8 rows, up to 16); n: one feature, a ragged 8-feature tile, many
// tiles, the model's 14336; k: one chunk, a ragged quad, the model's 4096. ldy > n where the
// canary columns should stay poisoned (silu_mul runs over all ldy columns of the unfused
// outputs, so the poisoned columns past n stay NaN there and are not compared).
TEST(GemvSiluMul, SameBitsAsGemvThenSiluMul) {
    struct Case {
        int64_t n, k, ldy;
    };
    const GemvDevice device = testing::must(gemv_device());
    for (const int32_t m : {1, 3, 8, 9, 16}) {
        for (const Case c : {Case{1, 8, 8}, Case{13, 200, 24}, Case{1024, 4096, 1024},
                             Case{1536, 576, 1536}, Case{14336, 4096, 14336}}) {
            for (const GemvDevice* d : {static_cast<const GemvDevice*>(nullptr), &device}) {
                SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(c.n) + ", k " +
                             std::to_string(c.k) + (d ? ", spaced" : ""));
                const GatedProblem p = make_problem(m, c.n, c.k, c.ldy);
                expect_fused_equals_unfused(p, d, {});
                if (m != 1) continue;
                SCOPED_TRACE("x's 1 / rms pending");
                const DeviceBuffer sums = testing::upload(
                    testing::random_floats((c.k + 15) / 16, 8100 + c.k, 0.0f, 64.0f));
                expect_fused_equals_unfused(p, d, {.sq_sums = sums.as<float>(), .eps = 1e-5f});
            }
        }
    }
}

class GemvSiluArgsTest : public ::testing::Test {
  protected:
    GemvParams valid() const {
        GemvParams p{.x = x_.as<bf16>(),
                     .ldx = 64,
                     .m = 4,
                     .k = 64,
                     .segments = {},
                     .num_segments = 2,
                     .epilogue = GemvEpilogue::kSiluMul};
        p.segments[0] = {.w = w_.as<bf16>(), .y = y_.data(), .n = 64, .ldy = 64};
        p.segments[1] = {.w = w_.as<bf16>(), .y = nullptr, .n = 64, .ldy = 64};
        return p;
    }

    DeviceBuffer x_ = poisoned(1 << 16);
    DeviceBuffer w_ = poisoned(1 << 16);
    DeviceBuffer y_ = poisoned(1 << 16);
};

TEST_F(GemvSiluArgsTest, UpNeedsNoOutput) {
    EXPECT_TRUE(gemv(valid(), nullptr).ok());
    testing::must_ok(cuda_status(cudaDeviceSynchronize(), "gemv"));
}

TEST_F(GemvSiluArgsTest, NamesWhatIsWrong) {
    GemvParams p = valid();
    p.num_segments = 3;
    p.segments[2] = p.segments[0];
    testing::expect_invalid_argument(gemv(p, nullptr), "kSiluMul takes gate and up");
    p = valid();
    p.segments[1].n = 32;
    testing::expect_invalid_argument(gemv(p, nullptr), "segments[1].n 32 != gate's 64");
    p = valid();
    p.segments[0].y_dtype = DType::kF32;
    testing::expect_invalid_argument(gemv(p, nullptr), "segments[0].y_dtype");
    p = valid();
    p.segments[0].y = nullptr;
    testing::expect_invalid_argument(gemv(p, nullptr), "segments[0].y is null");
    p = valid();
    p.segments[1].w = nullptr;
    testing::expect_invalid_argument(gemv(p, nullptr), "segments[1].w is null");
}

}  // namespace
}  // namespace se::cuda
