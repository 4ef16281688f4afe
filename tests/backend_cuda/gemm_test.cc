// cuda::Gemm against an f64 reference on bf16 inputs.
//
// Tolerance: every product of two bf16 values is exact in f32 (8 + 8 significant bits), so the
// only f32 error is in summing k of them: at most about k * 2^-24 * sum_j |a_j w_j| for any
// summation order (tiles, split-K with f32 partial sums). The tensor cores' adders truncate
// rather than round, which can double that, so the test allows (2k + 4) * 2^-24 * magnitude,
// where magnitude = sum_j |a_j w_j| (+ |D| when accumulating, whose f32 addition adds one more
// rounding). A bf16 D is then rounded once more: kBf16RelTol * |want|.
#include "backend/cuda/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload;
using testing::upload_bf16;

// A's rows sit in wider rows at this column (16-byte aligned), when strided.
constexpr int64_t kAColumn = 8;

struct Problem {
    int64_t m = 0;
    GemmShape shape;
    std::vector<float> a;       // bf16 values [m, lda]
    std::vector<float> w;       // bf16 values [n, k]
    std::vector<float> d_init;  // [m, ldd] when accumulating, else empty
};

Problem make_problem(int64_t m, int64_t n, int64_t k, DType d_dtype, bool strided) {
    Problem p;
    p.m = m;
    p.shape = {.n = n,
               .k = k,
               .lda = strided ? k + 3 * kAColumn : k,
               .ldd = strided ? n + 8 : n,
               .d_dtype = d_dtype};
    p.a = testing::random_bf16_values(m * p.shape.lda, 1, -1.0f, 1.0f);
    p.w = testing::random_bf16_values(n * k, 2, -0.5f, 0.5f);
    return p;
}

// The first element of A's k used columns in each row (a column slice when lda > k).
int64_t a_offset(const Problem& p) {
    return p.shape.lda > p.shape.k ? kAColumn : 0;
}

struct Reference {
    std::vector<float> want;       // [m, n]
    std::vector<float> tolerance;  // [m, n]
};

Reference reference(const Problem& p) {
    const GemmShape& s = p.shape;
    const double u = std::ldexp(1.0, -24);
    const double out_rel = s.d_dtype == DType::kBF16 ? testing::kBf16RelTol : 0.0;
    Reference r{std::vector<float>(p.m * s.n), std::vector<float>(p.m * s.n)};
    for (int64_t i = 0; i < p.m; ++i) {
        const float* a = p.a.data() + i * s.lda + a_offset(p);
        for (int64_t j = 0; j < s.n; ++j) {
            const float* w = p.w.data() + j * s.k;
            double sum = 0.0;
            double magnitude = 0.0;
            for (int64_t c = 0; c < s.k; ++c) {
                sum += double{a[c]} * w[c];
                magnitude += std::fabs(double{a[c]} * w[c]);
            }
            if (!p.d_init.empty()) {
                sum += s.beta * double{p.d_init[i * s.ldd + j]};
                magnitude += std::fabs(s.beta * double{p.d_init[i * s.ldd + j]});
            }
            r.want[i * s.n + j] = static_cast<float>(sum);
            r.tolerance[i * s.n + j] = static_cast<float>(
                (2.0 * s.k + 4.0) * u * magnitude * (1.0 + out_rel) + out_rel * std::fabs(sum));
        }
    }
    return r;
}

// D as stored on the device, read back as f32 values [m, ldd].
std::vector<float> read_d(const DeviceBuffer& d, const Problem& p) {
    const auto count = static_cast<size_t>(p.m * p.shape.ldd);
    if (p.shape.d_dtype == DType::kF32) return download<float>(d, count);
    return testing::download_bf16(d, count);
}

DeviceBuffer make_d(const Problem& p) {
    if (!p.d_init.empty()) return upload(p.d_init);  // accumulating: f32 only
    const size_t elem = p.shape.d_dtype == DType::kF32 ? 4 : 2;
    return poisoned(elem * p.m * p.shape.ldd);
}

Status run_gemm(Gemm& gemm, const Problem& p, const DeviceBuffer& d_a, const DeviceBuffer& d_w,
                const DeviceBuffer& d_d) {
    return gemm.run({.a = d_a.as<bf16>() + a_offset(p),
                     .w = d_w.as<bf16>(),
                     .d = d_d.data(),
                     .m = p.m,
                     .shape = p.shape},
                    nullptr);
}

// The n used columns of every row within tolerance; the padding columns of a strided D still
// hold what was there before (poison or d_init).
void expect_matches(const std::vector<float>& got, const Problem& p, const Reference& r) {
    const GemmShape& s = p.shape;
    int failures = 0;
    for (int64_t i = 0; i < p.m && failures < 10; ++i) {
        for (int64_t j = 0; j < s.ldd && failures < 10; ++j) {
            const float g = got[i * s.ldd + j];
            if (j >= s.n) {
                const bool untouched =
                    p.d_init.empty() ? std::isnan(g) : g == p.d_init[i * s.ldd + j];
                if (!untouched) {
                    ADD_FAILURE() << "padding written at row " << i << ", column " << j;
                    ++failures;
                }
                continue;
            }
            const float want = r.want[i * s.n + j];
            const float tol = r.tolerance[i * s.n + j];
            if (!(std::fabs(g - want) <= tol)) {
                ADD_FAILURE() << "D[" << i << ", " << j << "]: got " << g << ", want " << want
                              << " (tolerance " << tol << ")";
                ++failures;
            }
        }
    }
}

using GemmParam = std::tuple<int64_t, int64_t, int64_t, DType, bool>;  // m, n, k, D, strided

class GemmTest : public ::testing::TestWithParam<GemmParam> {};

TEST_P(GemmTest, MatchesF64Reference) {
    const auto [m, n, k, d_dtype, strided] = GetParam();
    const Problem p = make_problem(m, n, k, d_dtype, strided);
    Gemm gemm = testing::must(Gemm::create());
    const DeviceBuffer d_a = upload_bf16(p.a);
    const DeviceBuffer d_w = upload_bf16(p.w);
    const DeviceBuffer d_d = make_d(p);
    const Status s = run_gemm(gemm, p, d_a, d_w, d_d);
    ASSERT_TRUE(s.ok()) << s.to_string();
    expect_matches(read_d(d_d, p), p, reference(p));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTest,
                         ::testing::Combine(::testing::Values(1, 3, 16, 77, 300),
                                            ::testing::Values(64, 200), ::testing::Values(64, 512),
                                            ::testing::Values(DType::kBF16, DType::kF32),
                                            ::testing::Bool()));

TEST(GemmAccumulate, BetaOneAddsIntoF32D) {
    for (const int64_t m : {1, 77}) {
        Problem p = make_problem(m, 200, 512, DType::kF32, /*strided=*/true);
        p.shape.beta = 1.0f;
        p.d_init = testing::random_floats(m * p.shape.ldd, 3, -4.0f, 4.0f);
        Gemm gemm = testing::must(Gemm::create());
        const DeviceBuffer d_a = upload_bf16(p.a);
        const DeviceBuffer d_w = upload_bf16(p.w);
        const DeviceBuffer d_d = make_d(p);
        const Status s = run_gemm(gemm, p, d_a, d_w, d_d);
        ASSERT_TRUE(s.ok()) << s.to_string();
        SCOPED_TRACE("m " + std::to_string(m));
        expect_matches(read_d(d_d, p), p, reference(p));
    }
}

// Runs p through both Gemms with the same A and W and expects the same bytes in D, padding
// included; returns the first one's D.
DeviceBuffer expect_same_bits(Gemm& first, Gemm& second, const Problem& p, const DeviceBuffer& d_a,
                              const DeviceBuffer& d_w) {
    DeviceBuffer d_first = make_d(p);
    const DeviceBuffer d_second = make_d(p);
    testing::must_ok(run_gemm(first, p, d_a, d_w, d_first));
    testing::must_ok(run_gemm(second, p, d_a, d_w, d_second));
    const size_t bytes = d_first.size_bytes();
    EXPECT_TRUE(download<uint8_t>(d_first, bytes) == download<uint8_t>(d_second, bytes));
    return d_first;
}

// prepare() picks each bucket's algorithm with the same query a cache miss in run() makes, so
// the two paths give the same bits.
TEST(GemmPrepare, PreparedRunEqualsUnpreparedRun) {
    for (const DType d_dtype : {DType::kBF16, DType::kF32}) {
        for (const int64_t m : {1, 3, 77, 300}) {
            const Problem p = make_problem(m, 200, 512, d_dtype, /*strided=*/true);
            Gemm prepared = testing::must(Gemm::create());
            Gemm unprepared = testing::must(Gemm::create());
            testing::must_ok(prepared.prepare(p.shape, 512));
            SCOPED_TRACE(std::string(dtype_name(d_dtype)) + " m " + std::to_string(m));
            expect_same_bits(prepared, unprepared, p, upload_bf16(p.a), upload_bf16(p.w));
        }
    }
}

// tune() may pick another algorithm than the heuristic's first for the mid-sized buckets; whichever
// it picks, the results stay within the reference's tolerance, at the tuned sizes and past them.
TEST(GemmTune, TunedRunsMatchF64Reference) {
    for (const DType d_dtype : {DType::kBF16, DType::kF32}) {
        for (const int64_t n : {1024, 200}) {
            Gemm gemm = testing::must(Gemm::create());
            const Problem largest = make_problem(300, n, 512, d_dtype, /*strided=*/true);
            const DeviceBuffer d_w = upload_bf16(largest.w);
            testing::must_ok(gemm.prepare(largest.shape, 512));
            testing::must_ok(gemm.tune(largest.shape, d_w.as<bf16>(), 512, nullptr));
            for (const int64_t m : {17, 64, 129, 256, 300}) {
                const Problem p = make_problem(m, n, 512, d_dtype, /*strided=*/true);
                const DeviceBuffer d_a = upload_bf16(p.a);
                const DeviceBuffer d_d = make_d(p);
                const Status s = run_gemm(gemm, p, d_a, d_w, d_d);
                ASSERT_TRUE(s.ok()) << s.to_string();
                SCOPED_TRACE(std::string(dtype_name(d_dtype)) + " n " + std::to_string(n) + " m " +
                             std::to_string(m));
                expect_matches(read_d(d_d, p), p, reference(p));
            }
        }
    }
}

// The outputs never depend on what tune() measured: a tuned Gemm gives the bits of one that was
// only prepared (the heuristic's first choice), at every tuned bucket and past them, at a GQA k or
// v shape (n = 1024, k = 4096: few output tiles and a long k) and at a small one. Timings differ
// from run to run; a tune() that kept the fastest candidate whatever its bits failed here in 3
// runs of 3 (H200, 2026-12-03: n = 1024, m = 100).
TEST(GemmTune, TunedRunsGiveTheUntunedBits) {
    for (const DType d_dtype : {DType::kBF16, DType::kF32}) {
        for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1024, 4096}, {200, 512}}) {
            Gemm tuned = testing::must(Gemm::create());
            Gemm untuned = testing::must(Gemm::create());
            const Problem largest = make_problem(300, n, k, d_dtype, /*strided=*/false);
            const DeviceBuffer d_w = upload_bf16(largest.w);
            testing::must_ok(tuned.prepare(largest.shape, 512));
            testing::must_ok(tuned.tune(largest.shape, d_w.as<bf16>(), 512, nullptr));
            testing::must_ok(untuned.prepare(largest.shape, 512));
            for (const int64_t m : {17, 32, 64, 100, 256, 300}) {
                SCOPED_TRACE(std::string(dtype_name(d_dtype)) + " n " + std::to_string(n) + " m " +
                             std::to_string(m));
                const Problem p = make_problem(m, n, k, d_dtype, /*strided=*/false);
                const DeviceBuffer d_tuned =
                    expect_same_bits(tuned, untuned, p, upload_bf16(p.a), d_w);
                expect_matches(read_d(d_tuned, p), p, reference(p));
            }
        }
    }
}

TEST(GemmBucket, PowersOfTwoUpTo8192ThenExact) {
    EXPECT_EQ(gemm_m_bucket(1), 1);
    EXPECT_EQ(gemm_m_bucket(2), 2);
    EXPECT_EQ(gemm_m_bucket(3), 4);
    EXPECT_EQ(gemm_m_bucket(77), 128);
    EXPECT_EQ(gemm_m_bucket(4096), 4096);
    EXPECT_EQ(gemm_m_bucket(8191), 8192);
    EXPECT_EQ(gemm_m_bucket(8193), 8193);
}

class GemmArgsTest : public ::testing::Test {
  protected:
    // A valid call; each test breaks one thing.
    GemmArgs valid() const {
        return {.a = a_.as<bf16>(),
                .w = w_.as<bf16>(),
                .d = d_.data(),
                .m = 4,
                .shape = {.n = 64, .k = 64, .lda = 64, .ldd = 64, .d_dtype = DType::kBF16}};
    }

    void expect_invalid(const GemmArgs& args, const std::string& mentions) {
        testing::expect_invalid_argument(gemm_.run(args, nullptr), mentions);
    }

    Gemm gemm_ = testing::must(Gemm::create());
    DeviceBuffer a_ = testing::must(DeviceBuffer::allocate(1 << 16));
    DeviceBuffer w_ = testing::must(DeviceBuffer::allocate(1 << 16));
    DeviceBuffer d_ = testing::must(DeviceBuffer::allocate(1 << 16));
};

TEST_F(GemmArgsTest, ValidCallRuns) {
    EXPECT_TRUE(gemm_.run(valid(), nullptr).ok());
}

TEST_F(GemmArgsTest, NamesWhatIsWrong) {
    GemmArgs args = valid();
    args.a = a_.as<bf16>() + 1;
    expect_invalid(args, "a is not 16-byte aligned");
    args = valid();
    args.d = d_.as<bf16>() + 4;
    expect_invalid(args, "d is not 16-byte aligned");
    args = valid();
    args.shape.lda = 56;
    expect_invalid(args, "lda 56 < k 64");
    args = valid();
    args.shape.lda = 68;
    expect_invalid(args, "lda");
    args = valid();
    args.shape.k = 60;
    args.shape.lda = 64;
    expect_invalid(args, "k (the row of W) is 60");
    args = valid();
    args.shape.ldd = 68;
    expect_invalid(args, "ldd 68 is 136 bytes");
    args = valid();
    args.shape.d_dtype = DType::kF16;
    expect_invalid(args, "d_dtype");
    args = valid();
    args.w = nullptr;
    expect_invalid(args, "w is null");
}

TEST_F(GemmArgsTest, NoRowsIsANoOp) {
    GemmArgs args = valid();
    args.m = 0;
    args.a = nullptr;
    EXPECT_TRUE(gemm_.run(args, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
