// Programmatic dependent launches (pdl.cuh) keep the stream's order: a chain of kernels shaped like
// a decoder layer at decode time (add_rms_norm -> the fused gate/up GEMV -> GEMV -> add_rms_norm
// ...) queued back to back on one stream must give the bits of the same chain with the host waiting
// for each kernel before it launches the next (which leaves nothing to overlap). A kernel that read
// its input before pdl_wait(), or wrote its output while the previous kernel still read it, would
// see the older values now and then: the chain runs long enough (64 layers) and wide enough (the
// model's 4096 x 14336 shapes at 1 and 16 rows) for such a race to show. The GEMVs are launched as
// CudaOps launches them, spaced where they have few tiles.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cuda/add_rms_norm.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/stream.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::must_ok;
using testing::upload;
using testing::upload_bf16;

constexpr int64_t kHidden = 4096;
constexpr int64_t kInter = 14336;
constexpr int kLayers = 64;

struct Chain {
    int32_t m = 0;
    DeviceBuffer norm_weight;  // f32 [kHidden]
    DeviceBuffer gate, up;     // bf16 [kInter, kHidden]
    DeviceBuffer down;         // bf16 [kHidden, kInter]
    DeviceBuffer residual;     // f32 [m, kHidden]
    DeviceBuffer h;            // bf16 [m, kHidden]
    DeviceBuffer act;          // bf16 [m, kInter]
    DeviceBuffer out;          // bf16 [m, kHidden]
};

Chain make_chain(int32_t m) {
    // Weights small enough that 64 layers keep the residual finite and varied.
    return {m,
            upload(testing::random_floats(kHidden, 1, 0.5f, 1.5f)),
            upload_bf16(testing::random_bf16_values(kInter * kHidden, 2, -0.03f, 0.03f)),
            upload_bf16(testing::random_bf16_values(kInter * kHidden, 3, -0.03f, 0.03f)),
            upload_bf16(testing::random_bf16_values(kHidden * kInter, 4, -0.03f, 0.03f)),
            upload(testing::random_floats(m * kHidden, 5, -1.0f, 1.0f)),
            testing::poisoned(static_cast<size_t>(m * kHidden) * 2),
            testing::poisoned(static_cast<size_t>(m * kInter) * 2),
            upload_bf16(std::vector<float>(m * kHidden, 0.0f))};
}

// One layer's MLP: h = rms_norm(residual += out); act = silu(h gate^T) * (h up^T);
// out = act down^T. sync_each: the host waits for every kernel before launching the next.
void run_layers(Chain& c, const GemvDevice& device, cudaStream_t stream, bool sync_each) {
    const auto step = [&](const Status& s) {
        must_ok(s);
        if (sync_each) must_ok(cuda_status(cudaStreamSynchronize(stream), "sync"));
    };
    for (int layer = 0; layer < kLayers; ++layer) {
        step(add_rms_norm({.residual = c.residual.as<float>(),
                           .x = c.out.as<bf16>(),
                           .weight = c.norm_weight.as<float>(),
                           .out = c.h.as<bf16>(),
                           .num_rows = c.m,
                           .cols = static_cast<int32_t>(kHidden),
                           .eps = 1e-5f},
                          stream));
        GemvParams gated{.x = c.h.as<bf16>(),
                         .ldx = kHidden,
                         .m = c.m,
                         .k = kHidden,
                         .segments = {},
                         .num_segments = 2,
                         .epilogue = GemvEpilogue::kSiluMul,
                         .device = &device};
        gated.segments[0] = {.w = c.gate.as<bf16>(), .y = c.act.data(), .n = kInter, .ldy = kInter};
        gated.segments[1] = {.w = c.up.as<bf16>(), .y = nullptr, .n = kInter, .ldy = kInter};
        step(gemv(gated, stream));
        GemvParams down{.x = c.act.as<bf16>(),
                        .ldx = kInter,
                        .m = c.m,
                        .k = kInter,
                        .segments = {},
                        .num_segments = 1,
                        .epilogue = GemvEpilogue::kStore,
                        .device = &device};
        down.segments[0] = {
            .w = c.down.as<bf16>(), .y = c.out.data(), .n = kHidden, .ldy = kHidden};
        step(gemv(down, stream));
    }
    must_ok(cuda_status(cudaStreamSynchronize(stream), "sync"));
}

TEST(PdlChain, BackToBackLaunchesEqualHostOrderedLaunches) {
    const CudaStream stream = testing::must(CudaStream::create());
    // As CudaOps launches them: m = 1's down projection (256 tiles) is spaced (gemv_occupancy.h).
    const GemvDevice device = testing::must(gemv_device());
    for (const int32_t m : {1, 16}) {
        SCOPED_TRACE("m " + std::to_string(m));
        Chain queued = make_chain(m);
        Chain ordered = make_chain(m);
        run_layers(queued, device, stream.get(), /*sync_each=*/false);
        run_layers(ordered, device, stream.get(), /*sync_each=*/true);
        const size_t count = static_cast<size_t>(m * kHidden);
        const std::vector<uint32_t> a = download<uint32_t>(queued.residual, count);
        const std::vector<uint32_t> b = download<uint32_t>(ordered.residual, count);
        EXPECT_TRUE(a == b) << "the residual stream differs";
        const std::vector<float> residual = download<float>(ordered.residual, count);
        for (const float v : residual) ASSERT_TRUE(std::isfinite(v)) << "a non-finite residual";
    }
}

}  // namespace
}  // namespace se::cuda
