// cuda::gemv at one row of x with the residual add and RMSNorm split around it (rms_scale.h):
// GemvEpilogue::kResidualNorm (o or down, the residual add and the norm's weight, each tile's sum
// of squares) and GemvRowScale (the next projection's 1 / rms), each against an f64 reference.
// That the other epilogues apply the scale as kStore does is checked bit for bit in
// gemv_silu_test.cc and gemv_rope_test.cc.
//
// Tolerances. The projection's sum: as gemv_test.cc, (2k + 32) * 2^-24 * sum_j |x_j w_j|. The
// product is rounded to bf16 before the residual add, so a sum within that of a rounding boundary
// may round to the neighbouring bf16 value: the residual may be off by the sum's error plus one
// bf16 step of the product (kBf16RelTol * |product|), and one f32 rounding of the add. y =
// bf16(weight * residual) adds one bf16 rounding and carries the residual's error times |weight|.
// Each tile's sum of squares is compared with the f64 sum of the squares of the residual as the
// kernel wrote it (16 f32 squares and additions: 32 * 2^-24 of the sum). The row scale is the f32
// sum of ceil(k / 16) non-negative parts, divided, and rsqrtf'd (2 ulp): (parts + 8) * 2^-24
// relative, on top of the projection's bound.
//
// Outputs are poisoned (0xff bytes, NaN): every element the kernel must write fails while NaN, and
// the elements past n (residual, y, sums) must keep the poison's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/gemv.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::must_ok;
using testing::poisoned;
using testing::upload;
using testing::upload_bf16;

constexpr int64_t kCanary = 9;  // elements past n (or past the sums) that must stay poisoned
constexpr double kU = 1.0 / (1 << 24);

double bf16_round(double v) {
    return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
}

// x · w^T of row j (x and w bf16 values), and the sum of the products' magnitudes.
struct Dot {
    double sum = 0.0;
    double magnitude = 0.0;
};

Dot dot(const std::vector<float>& x, const std::vector<float>& w, int64_t j, int64_t k) {
    Dot d;
    for (int64_t c = 0; c < k; ++c) {
        const double product = double{x[c]} * w[j * k + c];
        d.sum += product;
        d.magnitude += std::fabs(product);
    }
    return d;
}

std::vector<float> download_f32(const DeviceBuffer& buf, size_t count) {
    const std::vector<uint32_t> bits = download<uint32_t>(buf, count);
    std::vector<float> out(count);
    std::memcpy(out.data(), bits.data(), count * sizeof(float));
    return out;
}

// Counts the elements of [from, count) whose bits are not the poison's (0xff bytes).
template <typename T>
int64_t written_past(const DeviceBuffer& buf, size_t from, size_t count) {
    const std::vector<T> bits = download<T>(buf, count);
    int64_t written = 0;
    for (size_t i = from; i < count; ++i) written += bits[i] != static_cast<T>(~T{0});
    return written;
}

struct NormProblem {
    NormProblem(int64_t n_in, int64_t k_in) : n(n_in), k(k_in) {
        const auto seed = static_cast<uint32_t>(4100 + n + 3 * k);
        x = testing::random_bf16_values(k, seed, -1.0f, 1.0f);
        w = testing::random_bf16_values(n * k, seed + 1, -0.5f, 0.5f);
        residual = testing::random_floats(n, seed + 2, -4.0f, 4.0f);
        norm_weight = testing::random_floats(n, seed + 3, 0.5f, 1.5f);
    }

    int64_t n, k;
    std::vector<float> x, w, residual, norm_weight;
};

// One kResidualNorm launch of p and what it wrote.
struct NormRun {
    explicit NormRun(const NormProblem& p)
        : x(upload_bf16(p.x)),
          w(upload_bf16(p.w)),
          residual(poisoned((p.n + kCanary) * sizeof(float))),
          weight(upload(p.norm_weight)),
          y(poisoned((p.n + kCanary) * 2)),
          sq_sums(poisoned((gemv_norm_sums(p.n) + kCanary) * sizeof(float))) {
        must_ok(cuda_status(cudaMemcpy(residual.data(), p.residual.data(), p.n * sizeof(float),
                                       cudaMemcpyHostToDevice),
                            "upload residual"));
    }

    GemvParams params(const NormProblem& p, const GemvDevice* device) const {
        GemvParams g{.x = x.as<bf16>(),
                     .ldx = p.k,
                     .m = 1,
                     .k = p.k,
                     .segments = {},
                     .num_segments = 1,
                     .epilogue = GemvEpilogue::kResidualNorm,
                     .device = device};
        g.segments[0] = {.w = w.as<bf16>(), .y = y.data(), .n = p.n, .ldy = p.n};
        g.norm = {.residual = residual.as<float>(),
                  .weight = weight.as<float>(),
                  .sq_sums = sq_sums.as<float>()};
        return g;
    }

    DeviceBuffer x, w, residual, weight, y, sq_sums;
};

void expect_norm_matches(const NormProblem& p, const NormRun& run) {
    const auto n = static_cast<size_t>(p.n);
    const auto parts = static_cast<size_t>(gemv_norm_sums(p.n));
    const std::vector<float> residual = download_f32(run.residual, n);
    const std::vector<float> y = testing::download_bf16(run.y, n);
    const std::vector<float> sums = download_f32(run.sq_sums, parts);
    int failures = 0;
    for (int64_t j = 0; j < p.n && failures < 10; ++j) {
        const Dot d = dot(p.x, p.w, j, p.k);
        const double sum_tol = (2.0 * p.k + 32.0) * kU * d.magnitude;
        const double want = p.residual[j] + bf16_round(d.sum);
        const double res_tol = sum_tol + testing::kBf16RelTol * (std::fabs(d.sum) + sum_tol) +
                               2 * kU * std::fabs(want);
        if (!(std::fabs(residual[j] - want) <= res_tol)) {
            ADD_FAILURE() << "residual[" << j << "] is " << residual[j] << ", want " << want
                          << " (tolerance " << res_tol << ")";
            ++failures;
        }
        const double want_y = double{p.norm_weight[j]} * want;
        const double y_tol = p.norm_weight[j] * res_tol + testing::kBf16RelTol * std::fabs(want_y);
        if (!(std::fabs(y[j] - want_y) <= y_tol)) {
            ADD_FAILURE() << "y[" << j << "] is " << y[j] << ", want " << want_y << " (tolerance "
                          << y_tol << ")";
            ++failures;
        }
    }
    for (size_t t = 0; t < parts && failures < 10; ++t) {
        double want = 0.0;
        for (size_t j = t * kGemvTileRows; j < std::min(n, (t + 1) * kGemvTileRows); ++j) {
            want += double{residual[j]} * residual[j];
        }
        if (!(std::fabs(sums[t] - want) <= 32 * kU * want)) {
            ADD_FAILURE() << "sq_sums[" << t << "] is " << sums[t] << ", want " << want;
            ++failures;
        }
    }
    EXPECT_EQ(written_past<uint32_t>(run.residual, n, n + kCanary), 0) << "residual past n";
    EXPECT_EQ(written_past<uint16_t>(run.y, n, n + kCanary), 0) << "y past n";
    EXPECT_EQ(written_past<uint32_t>(run.sq_sums, parts, parts + kCanary), 0) << "sums past tiles";
}

// n: one row, a ragged tile, SmolLM2's hidden size, the 8B model's (o and down: 256 tiles, the
// launch spaced over the SMs); k: one chunk, a ragged quad, the attention output, a round of
// kWideUnroll slices and a part of one (2312: ten slices, the last ending in one chunk and a half
// round), and down's inputs. Spaced and bare launches must also give the same bits: with the
// device's numbers every n here is a launch of at most two waves, which takes the 2-CTA kernel
// with twice the slices in flight, and without them the 3-CTA kernel (gemv.cu).
TEST(GemvResidualNorm, MatchesF64Reference) {
    const GemvDevice device = testing::must(gemv_device());
    for (const int64_t n : {1, 13, 576, 4096}) {
        for (const int64_t k : {8, 200, 1536, 2312, 4096, 14336}) {
            SCOPED_TRACE("n " + std::to_string(n) + ", k " + std::to_string(k));
            const NormProblem p(n, k);
            const NormRun bare(p);
            const NormRun spaced(p);
            must_ok(gemv(bare.params(p, nullptr), nullptr));
            must_ok(gemv(spaced.params(p, &device), nullptr));
            expect_norm_matches(p, bare);
            expect_norm_matches(p, spaced);
            for (const auto& [a, b] :
                 {std::pair{&bare.residual, &spaced.residual}, std::pair{&bare.y, &spaced.y},
                  std::pair{&bare.sq_sums, &spaced.sq_sums}}) {
                EXPECT_TRUE(download<uint8_t>(*a, a->size_bytes()) ==
                            download<uint8_t>(*b, b->size_bytes()));
            }
        }
    }
}

// kStore at one row with x's 1 / rms pending: every output is scale * (x · w^T).
TEST(GemvRowScale, StoreMatchesF64Reference) {
    const GemvDevice device = testing::must(gemv_device());
    // k: a ragged quad (13 parts), SmolLM2's 576, 4096 (256 parts: one a thread), and 8200 (513
    // parts: past one a thread, so the epilogue adds the rest).
    for (const int64_t k : {200, 576, 4096, 8200}) {
        for (const DType y_dtype : {DType::kBF16, DType::kF32}) {
            for (const GemvDevice* d : {static_cast<const GemvDevice*>(nullptr), &device}) {
                SCOPED_TRACE("k " + std::to_string(k) + (y_dtype == DType::kF32 ? ", f32" : "") +
                             (d ? ", spaced" : ""));
                const int64_t n = 1000;
                const auto seed = static_cast<uint32_t>(5300 + k);
                const std::vector<float> x = testing::random_bf16_values(k, seed, -1.0f, 1.0f);
                const std::vector<float> w =
                    testing::random_bf16_values(n * k, seed + 1, -0.5f, 0.5f);
                const int64_t parts = gemv_norm_sums(k);
                // Sums of squares of a residual of about 2 per element, each part its own.
                const std::vector<float> sums =
                    testing::random_floats(parts, seed + 2, 0.0f, 128.0f);
                const float eps = 1e-5f;
                double total = 0.0;
                for (const float s : sums) total += s;
                const double scale = 1.0 / std::sqrt(total / static_cast<double>(k) + eps);

                const DeviceBuffer dx = upload_bf16(x);
                const DeviceBuffer dw = upload_bf16(w);
                const DeviceBuffer dsums = upload(sums);
                const size_t elem = y_dtype == DType::kF32 ? 4 : 2;
                const DeviceBuffer dy = poisoned((n + kCanary) * elem);
                GemvParams g{.x = dx.as<bf16>(),
                             .ldx = k,
                             .m = 1,
                             .k = k,
                             .segments = {},
                             .num_segments = 1,
                             .device = d};
                g.segments[0] = {
                    .w = dw.as<bf16>(), .y = dy.data(), .n = n, .ldy = n, .y_dtype = y_dtype};
                g.x_scale = {.sq_sums = dsums.as<float>(), .eps = eps};
                must_ok(gemv(g, nullptr));

                const std::vector<float> got =
                    y_dtype == DType::kF32 ? download_f32(dy, n) : testing::download_bf16(dy, n);
                const double out_rel = y_dtype == DType::kF32 ? 0.0 : testing::kBf16RelTol;
                const double scale_rel = (static_cast<double>(parts) + 8.0) * kU;
                int failures = 0;
                for (int64_t j = 0; j < n && failures < 10; ++j) {
                    const Dot dd = dot(x, w, j, k);
                    const double want = scale * dd.sum;
                    const double tol =
                        scale *
                            ((2.0 * k + 32.0) * kU * dd.magnitude + scale_rel * std::fabs(dd.sum)) *
                            (1.0 + out_rel) +
                        out_rel * std::fabs(want);
                    if (!(std::fabs(got[j] - want) <= tol)) {
                        ADD_FAILURE() << "y[" << j << "] is " << got[j] << ", want " << want
                                      << " (tolerance " << tol << ")";
                        ++failures;
                    }
                }
                if (y_dtype == DType::kF32) {
                    EXPECT_EQ(written_past<uint32_t>(dy, n, n + kCanary), 0) << "y past n";
                } else {
                    EXPECT_EQ(written_past<uint16_t>(dy, n, n + kCanary), 0) << "y past n";
                }
            }
        }
    }
}

// The producer and the consumer together, as a batch-1 decode step chains them (o, then gate|up
// as kStore here): the consumer's outputs equal (rms_norm(residual) as the reference computes it)
// · w^T within the bounds above and one more bf16 rounding of y (the consumer reads
// bf16(weight * residual), not the normed value).
TEST(GemvRowScale, ChainsWithResidualNorm) {
    const NormProblem p(576, 576);  // SmolLM2's o: hidden 576
    const NormRun run(p);
    must_ok(gemv(run.params(p, nullptr), nullptr));
    const int64_t n = 1536;
    const std::vector<float> w2 = testing::random_bf16_values(n * p.n, 77, -0.5f, 0.5f);
    const DeviceBuffer dw2 = upload_bf16(w2);
    const DeviceBuffer dy2 = poisoned(n * sizeof(float));
    GemvParams g{
        .x = run.y.as<bf16>(), .ldx = p.n, .m = 1, .k = p.n, .segments = {}, .num_segments = 1};
    g.segments[0] = {
        .w = dw2.as<bf16>(), .y = dy2.data(), .n = n, .ldy = n, .y_dtype = DType::kF32};
    const float eps = 1e-5f;
    g.x_scale = {.sq_sums = run.sq_sums.as<float>(), .eps = eps};
    must_ok(gemv(g, nullptr));

    // The reference norm from the residual the first launch wrote (checked by the test above).
    const std::vector<float> residual = download_f32(run.residual, p.n);
    double squares = 0.0;
    for (const float r : residual) squares += double{r} * r;
    const double inv_rms = 1.0 / std::sqrt(squares / static_cast<double>(p.n) + eps);
    std::vector<float> normed(p.n);
    for (int64_t c = 0; c < p.n; ++c)
        normed[c] = static_cast<float>(p.norm_weight[c] * residual[c]);
    const std::vector<float> got = download_f32(dy2, n);
    int failures = 0;
    for (int64_t j = 0; j < n && failures < 10; ++j) {
        const Dot d = dot(normed, w2, j, p.n);
        const double want = inv_rms * d.sum;
        // The consumer read bf16(normed): up to kBf16RelTol of each |x_c w_c| more.
        const double tol =
            inv_rms * ((2.0 * p.n + 32.0) * kU * d.magnitude + testing::kBf16RelTol * d.magnitude +
                       (gemv_norm_sums(p.n) + 8.0) * kU * std::fabs(d.sum));
        if (!(std::fabs(got[j] - want) <= tol)) {
            ADD_FAILURE() << "y[" << j << "] is " << got[j] << ", want " << want << " (tolerance "
                          << tol << ")";
            ++failures;
        }
    }
}

class GemvNormArgsTest : public ::testing::Test {
  protected:
    GemvParams valid() const {
        GemvParams p{.x = buf_.as<bf16>(),
                     .ldx = 64,
                     .m = 1,
                     .k = 64,
                     .segments = {},
                     .num_segments = 1,
                     .epilogue = GemvEpilogue::kResidualNorm};
        p.segments[0] = {.w = buf_.as<bf16>(), .y = y_.data(), .n = 64, .ldy = 64};
        p.norm = {
            .residual = f32_.as<float>(), .weight = f32_.as<float>(), .sq_sums = sums_.as<float>()};
        return p;
    }

    DeviceBuffer buf_ = poisoned(1 << 16);
    DeviceBuffer y_ = poisoned(1 << 16);
    DeviceBuffer f32_ = poisoned(1 << 16);
    DeviceBuffer sums_ = poisoned(1 << 12);
};

TEST_F(GemvNormArgsTest, ValidLaunchRuns) {
    EXPECT_TRUE(gemv(valid(), nullptr).ok());
    must_ok(cuda_status(cudaDeviceSynchronize(), "gemv"));
}

TEST_F(GemvNormArgsTest, NamesWhatIsWrong) {
    GemvParams p = valid();
    p.m = 2;
    testing::expect_invalid_argument(gemv(p, nullptr), "m is 2, kResidualNorm takes 1");
    p = valid();
    p.num_segments = 2;
    p.segments[1] = p.segments[0];
    testing::expect_invalid_argument(gemv(p, nullptr), "num_segments is 2, kResidualNorm takes 1");
    p = valid();
    p.segments[0].y_dtype = DType::kF32;
    testing::expect_invalid_argument(gemv(p, nullptr), "segments[0].y_dtype");
    p = valid();
    p.norm.residual = nullptr;
    testing::expect_invalid_argument(gemv(p, nullptr), "norm.residual is null");
    p = valid();
    p.norm.weight = nullptr;
    testing::expect_invalid_argument(gemv(p, nullptr), "norm.weight is null");
    p = valid();
    p.norm.sq_sums = nullptr;
    testing::expect_invalid_argument(gemv(p, nullptr), "norm.sq_sums is null");
    p = valid();
    p.epilogue = GemvEpilogue::kStore;
    p.m = 3;
    p.x_scale = {.sq_sums = sums_.as<float>(), .eps = 1e-5f};
    testing::expect_invalid_argument(gemv(p, nullptr), "x_scale is set for m 3");
}

}  // namespace
}  // namespace se::cuda
