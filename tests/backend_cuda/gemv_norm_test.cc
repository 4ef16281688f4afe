// The GEMV's two halves of a folded seam, each against the launches it replaces, bit for bit:
//   * GemvInputNorm (every CTA computes x = rms_norm(residual) * weight itself) against
//     add_rms_norm with nothing to add into a bf16 x, then the same launch reading that x. The
//     staged x is rms_norm_row.cuh's arithmetic on add_rms_norm's pieces, so x, and so every
//     output, must have the same bits.
//   * GemvEpilogue::kAddResidual (y f32 += the product rounded to bf16) against kStore into bf16
//     and the same f32 additions on the host (the residual_add kernel is one IEEE add per element
//     too, residual_add_test.cc).
// Outputs carry poisoned canary columns past n and rows past m; the x of a normed launch is null,
// so a launch that read it would fault.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cuda/add_rms_norm.h"
#include "backend/cuda/gemv.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::must_ok;
using testing::poisoned;
using testing::upload;
using testing::upload_bf16;

constexpr float kEps = 1e-5f;

// m rows of a residual stream [m, ld] (k used), a norm weight and two weights [n, k].
struct NormProblem {
    NormProblem(int32_t m_in, int64_t k_in, int64_t n_in)
        : m(m_in), k(k_in), n(n_in), ld(k_in + 16) {
        const auto seed = static_cast<uint32_t>(31 * m + k + 7 * n);
        residual_host = testing::random_floats(m * ld, seed, -4.0f, 4.0f);
        // A few outliers, as the residual streams of real models have.
        for (int32_t r = 0; r < m; ++r) residual_host[r * ld + (r * 37) % k] = 90.0f - r;
        residual = upload(residual_host);
        weight = upload(testing::random_floats(k, seed + 1, 0.25f, 1.75f));
        w0 = upload_bf16(testing::random_bf16_values(n * k, seed + 2, -0.5f, 0.5f));
        w1 = upload_bf16(testing::random_bf16_values(n * k, seed + 3, -0.5f, 0.5f));
    }

    int64_t ldy() const { return n + 8; }
    size_t y_elems() const { return static_cast<size_t>((m + 1) * ldy()); }

    // The unfused path's x: add_rms_norm, nothing added, of the residual's used columns.
    DeviceBuffer normed_x() const {
        std::vector<float> rows(static_cast<size_t>(m * k));
        for (int32_t r = 0; r < m; ++r) {
            for (int64_t c = 0; c < k; ++c) rows[r * k + c] = residual_host[r * ld + c];
        }
        DeviceBuffer compact = upload(rows);
        DeviceBuffer x = poisoned(rows.size() * 2);
        must_ok(add_rms_norm({.residual = compact.as<float>(),
                              .weight = weight.as<float>(),
                              .out = x.as<bf16>(),
                              .num_rows = m,
                              .cols = static_cast<int32_t>(k),
                              .eps = kEps},
                             nullptr));
        must_ok(cuda_status(cudaDeviceSynchronize(), "add_rms_norm"));
        return x;
    }

    GemvInputNorm norm() const {
        return {
            .residual = residual.as<float>(), .ld = ld, .weight = weight.as<float>(), .eps = kEps};
    }

    int32_t m;
    int64_t k, n, ld;
    std::vector<float> residual_host;
    DeviceBuffer residual, weight, w0, w1;
};

GemvParams launch_of(const NormProblem& p, const bf16* x, GemvEpilogue epilogue, void* y) {
    GemvParams g{.x = x,
                 .ldx = p.k,
                 .m = p.m,
                 .k = p.k,
                 .segments = {},
                 .num_segments = epilogue == GemvEpilogue::kSiluMul ? 2 : 1,
                 .epilogue = epilogue};
    g.segments[0] = {.w = p.w0.as<bf16>(), .y = y, .n = p.n, .ldy = p.ldy()};
    g.segments[1] = {.w = p.w1.as<bf16>(), .y = nullptr, .n = p.n, .ldy = p.ldy()};
    return g;
}

void expect_same_bits(const DeviceBuffer& got, const DeviceBuffer& want, size_t count, int64_t row,
                      const std::string& what) {
    const std::vector<uint16_t> g = download<uint16_t>(got, count);
    const std::vector<uint16_t> w = download<uint16_t>(want, count);
    int failures = 0;
    for (size_t i = 0; i < count && failures < 10; ++i) {
        if (g[i] == w[i]) continue;
        ADD_FAILURE() << what << " [" << static_cast<int64_t>(i) / row << ", "
                      << static_cast<int64_t>(i) % row << "] bits " << g[i] << ", want " << w[i];
        ++failures;
    }
    EXPECT_NE(g[0], 0xffff) << what << " was not written";
}

// m up to kGemvMaxNormedRows; k of one piece per thread and less (64, 200, 576), SmolLM2's and the
// 8B model's hidden sizes, a ragged 2056 and an 8200 that takes add_rms_norm's looping kernel.
class GemvInputNormTest : public ::testing::Test {
  protected:
    const GemvDevice device_ = testing::must(gemv_device());
};

TEST_F(GemvInputNormTest, SameBitsAsRmsNormThenGemv) {
    struct Case {
        int32_t m;
        int64_t k;
    };
    const Case cases[] = {{1, 64},   {1, 576},  {1, 4096}, {1, 8200}, {2, 200},
                          {3, 2056}, {5, 4096}, {8, 576},  {8, 2048}};
    for (const Case& c : cases) {
        for (const GemvEpilogue e : {GemvEpilogue::kStore, GemvEpilogue::kSiluMul}) {
            SCOPED_TRACE("m " + std::to_string(c.m) + ", k " + std::to_string(c.k) +
                         (e == GemvEpilogue::kSiluMul ? ", SiLU" : ", store"));
            const NormProblem p(c.m, c.k, 40);
            const DeviceBuffer x = p.normed_x();
            DeviceBuffer want = poisoned(p.y_elems() * 2);
            must_ok(gemv(launch_of(p, x.as<bf16>(), e, want.data()), nullptr));
            // Without the device's numbers, and with them: a launch of few tiles is spaced over
            // the SMs by shared memory it asks for, which must hold the staged x too.
            for (const GemvDevice* device : {static_cast<const GemvDevice*>(nullptr), &device_}) {
                DeviceBuffer got = poisoned(p.y_elems() * 2);
                GemvParams g = launch_of(p, nullptr, e, got.data());
                g.norm = p.norm();
                g.device = device;
                must_ok(gemv(g, nullptr));
                expect_same_bits(got, want, p.y_elems(), p.ldy(),
                                 device == nullptr ? "y" : "y, spaced");
            }
        }
    }
}

// y += the product rounded to bf16, at both MMA shapes, over one segment or two.
TEST(GemvAddResidual, AddsTheBf16ProductToTheResidual) {
    for (const int32_t m : {1, 3, 8, 9, 16}) {
        for (const int64_t k : {200, 4096}) {
            SCOPED_TRACE("m " + std::to_string(m) + ", k " + std::to_string(k));
            const NormProblem p(m, k, 72);
            const DeviceBuffer x =
                upload_bf16(testing::random_bf16_values(m * k, 5 + m, -1.0f, 1.0f));
            // The products in bf16, as kStore writes them, for both segments.
            DeviceBuffer products0 = poisoned(p.y_elems() * 2);
            DeviceBuffer products1 = poisoned(p.y_elems() * 2);
            GemvParams store = launch_of(p, x.as<bf16>(), GemvEpilogue::kStore, products0.data());
            store.num_segments = 2;
            store.segments[1].y = products1.data();
            must_ok(gemv(store, nullptr));

            const std::vector<float> start =
                testing::random_floats(static_cast<int64_t>(p.y_elems()), 9 + m, -3.0f, 3.0f);
            DeviceBuffer y0 = upload(start);
            DeviceBuffer y1 = upload(start);
            GemvParams add = store;
            add.epilogue = GemvEpilogue::kAddResidual;
            add.segments[0].y = y0.data();
            add.segments[0].y_dtype = DType::kF32;
            add.segments[1].y = y1.data();
            add.segments[1].y_dtype = DType::kF32;
            must_ok(gemv(add, nullptr));

            const DeviceBuffer* products[] = {&products0, &products1};
            const DeviceBuffer* ys[] = {&y0, &y1};
            for (int s = 0; s < 2; ++s) {
                const std::vector<float> product =
                    testing::download_bf16(*products[s], p.y_elems());
                std::vector<float> want = start;  // canary rows and columns stay as they were
                for (int32_t r = 0; r < m; ++r) {
                    for (int64_t c = 0; c < p.n; ++c)
                        want[r * p.ldy() + c] += product[r * p.ldy() + c];
                }
                testing::expect_all_equal(download<float>(*ys[s], p.y_elems()), want,
                                          "segment " + std::to_string(s));
            }
        }
    }
}

class GemvNormArgsTest : public ::testing::Test {
  protected:
    GemvParams valid() {
        GemvParams p{.x = nullptr,
                     .ldx = 0,
                     .m = 2,
                     .k = 64,
                     .segments = {},
                     .num_segments = 1,
                     .epilogue = GemvEpilogue::kStore};
        p.segments[0] = {.w = buf_.as<bf16>(), .y = y_.data(), .n = 16, .ldy = 16};
        p.norm = {.residual = buf_.as<float>(), .ld = 64, .weight = buf_.as<float>(), .eps = kEps};
        return p;
    }

    DeviceBuffer buf_ = upload(std::vector<float>(1 << 14, 0.5f));
    DeviceBuffer y_ = poisoned(1 << 16);
};

TEST_F(GemvNormArgsTest, XIsNotNeeded) {
    EXPECT_TRUE(gemv(valid(), nullptr).ok());
    must_ok(cuda_status(cudaDeviceSynchronize(), "gemv"));
}

TEST_F(GemvNormArgsTest, NamesWhatIsWrong) {
    const auto expect_bad = [](const GemvParams& p, const std::string& mentions) {
        testing::expect_invalid_argument(gemv(p, nullptr), mentions);
    };
    GemvParams p = valid();
    p.m = 9;
    expect_bad(p, "m is 9, norm takes at most 8 rows");
    p = valid();
    p.m = 6;
    p.k = 4096;
    p.norm.ld = 4096;
    expect_bad(p, "k 4096 at m 6 stages over 49152 bytes");
    p = valid();
    p.epilogue = GemvEpilogue::kAddResidual;
    p.segments[0].y_dtype = DType::kF32;
    expect_bad(p, "norm is not taken with kAddResidual");
    p = valid();
    p.norm.ld = 56;
    expect_bad(p, "norm.ld 56 < k 64");
    p = valid();
    p.norm.ld = 68;
    expect_bad(p, "norm.ld");
    p = valid();
    p.norm.weight = nullptr;
    expect_bad(p, "norm.weight is null");
    p = valid();
    p.norm.eps = -1.0f;
    expect_bad(p, "norm.eps is negative or NaN");
    p = valid();
    p.norm = {};
    p.ldx = 64;
    expect_bad(p, "x is null");
}

TEST(GemvAddResidualArgs, TheResidualIsF32) {
    const DeviceBuffer buf = poisoned(1 << 14);
    GemvParams p{.x = buf.as<bf16>(),
                 .ldx = 64,
                 .m = 1,
                 .k = 64,
                 .segments = {},
                 .num_segments = 1,
                 .epilogue = GemvEpilogue::kAddResidual};
    p.segments[0] = {.w = buf.as<bf16>(), .y = buf.data(), .n = 16, .ldy = 16};
    testing::expect_invalid_argument(gemv(p, nullptr),
                                     "segments[0].y_dtype is not f32 (kAddResidual");
}

}  // namespace
}  // namespace se::cuda
