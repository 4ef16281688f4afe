// cuda::gemv against an f64 reference on bf16 inputs: one to three segments of different n in one
// launch, bf16 and f32 outputs, strided x and y, and the argument checks.
//
// Tolerance: a product of two bf16 values is exact in f32 (8 + 8 significant bits), so the only
// f32 error is in the sums: the MMAs add 16 products at a time into the f32 accumulator, and the
// CTA's 8 warps' partial sums are then added in f32, about k + 8 roundings of at most 2^-24 of
// sum_j |x_j w_j| each. The tensor cores' adders truncate rather than round, which can double
// that, so the test allows (2k + 32) * 2^-24 * magnitude, magnitude = sum_j |x_j w_j| (the same
// bound as the cuBLASLt GEMM test, with room for the warp sum). A bf16 y is then rounded once:
// kBf16RelTol * |want|.
//
// y is poisoned (0xff bytes, NaN) with one row past m: every element the kernel must write
// fails while NaN, and every element it must not write (columns [n, ldy), row m) must keep the
// poison's exact bits.
#include "backend/cuda/gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload_bf16;

constexpr int64_t kXColumn = 8;  // x's k columns start here in its wider rows, when strided

struct SegmentSpec {
    int64_t n = 0;
    DType y_dtype = DType::kBF16;
    int64_t ldy = 0;  // 0 means n
};

struct Problem {
    int32_t m = 0;
    int64_t k = 0;
    int64_t ldx = 0;
    int64_t x_column = 0;  // where the k used columns start in each row of x
    std::vector<float> x;  // bf16 values [m, ldx]
    std::vector<SegmentSpec> segments;
    std::vector<std::vector<float>> w;  // bf16 values [n, k], one per segment
};

Problem make_problem(int32_t m, int64_t k, bool strided_x, std::vector<SegmentSpec> segments) {
    Problem p;
    p.m = m;
    p.k = k;
    p.ldx = strided_x ? k + 3 * kXColumn : k;
    p.x_column = strided_x ? kXColumn : 0;
    const auto seed = static_cast<uint32_t>(1000 * m + k);
    p.x = testing::random_bf16_values(m * p.ldx, seed, -1.0f, 1.0f);
    for (size_t s = 0; s < segments.size(); ++s) {
        if (segments[s].ldy == 0) segments[s].ldy = segments[s].n;
        p.w.push_back(testing::random_bf16_values(
            segments[s].n * k, seed + 1 + static_cast<uint32_t>(s), -0.5f, 0.5f));
    }
    p.segments = std::move(segments);
    return p;
}

size_t y_elem_bytes(DType dtype) {
    return dtype == DType::kF32 ? 4 : 2;
}

// y as allocated: [m + 1, ldy], the last row a canary.
size_t y_count(const Problem& p, const SegmentSpec& s) {
    return static_cast<size_t>((p.m + 1) * s.ldy);
}

struct DeviceProblem {
    DeviceBuffer x;
    std::vector<DeviceBuffer> w;  // empty for n == 0
    std::vector<DeviceBuffer> y;  // empty for n == 0
};

DeviceProblem upload_problem(const Problem& p) {
    DeviceProblem d{upload_bf16(p.x), {}, {}};
    for (size_t s = 0; s < p.segments.size(); ++s) {
        const SegmentSpec& seg = p.segments[s];
        d.w.push_back(seg.n > 0 ? upload_bf16(p.w[s]) : DeviceBuffer());
        d.y.push_back(seg.n > 0 ? poisoned(y_elem_bytes(seg.y_dtype) * y_count(p, seg))
                                : DeviceBuffer());
    }
    return d;
}

GemvParams params_of(const Problem& p, const DeviceProblem& d) {
    GemvParams g{.x = d.x.as<bf16>() + p.x_column,
                 .ldx = p.ldx,
                 .m = p.m,
                 .k = p.k,
                 .segments = {},
                 .num_segments = static_cast<int32_t>(p.segments.size())};
    for (size_t s = 0; s < p.segments.size(); ++s) {
        const SegmentSpec& seg = p.segments[s];
        g.segments[s] = {.w = d.w[s].as<bf16>(),
                         .y = d.y[s].data(),
                         .n = seg.n,
                         .ldy = seg.ldy,
                         .y_dtype = seg.y_dtype};
    }
    return g;
}

// y read back: each element's raw bits (to tell the poison from a written NaN) and its value.
struct ReadBack {
    std::vector<uint32_t> bits;
    std::vector<float> values;
};

ReadBack read_y(const DeviceBuffer& y, size_t count, DType dtype) {
    ReadBack r{std::vector<uint32_t>(count), std::vector<float>(count)};
    if (dtype == DType::kF32) {
        const std::vector<uint32_t> raw = download<uint32_t>(y, count);
        r.bits = raw;
        std::memcpy(r.values.data(), raw.data(), count * sizeof(float));
        return r;
    }
    const std::vector<uint16_t> raw = download<uint16_t>(y, count);
    for (size_t i = 0; i < count; ++i) {
        r.bits[i] = raw[i];
        r.values[i] = bf16_to_f32(raw[i]);
    }
    return r;
}

void expect_segment_matches(const Problem& p, size_t s, const DeviceBuffer& y) {
    const SegmentSpec& seg = p.segments[s];
    const ReadBack got = read_y(y, y_count(p, seg), seg.y_dtype);
    const bool f32 = seg.y_dtype == DType::kF32;
    const uint32_t poison = f32 ? 0xffffffffu : 0xffffu;
    const double u = std::ldexp(1.0, -24);
    const double out_rel = f32 ? 0.0 : testing::kBf16RelTol;
    const std::string what = "segment " + std::to_string(s);
    int failures = 0;
    for (int64_t i = 0; i <= p.m && failures < 10; ++i) {
        for (int64_t j = 0; j < seg.ldy && failures < 10; ++j) {
            const size_t at = static_cast<size_t>(i * seg.ldy + j);
            if (i == p.m || j >= seg.n) {
                if (got.bits[at] != poison) {
                    ADD_FAILURE() << what << ": y[" << i << ", " << j << "] written outside [m, n)";
                    ++failures;
                }
                continue;
            }
            const float* x = p.x.data() + i * p.ldx + p.x_column;
            const float* w = p.w[s].data() + j * p.k;
            double sum = 0.0;
            double magnitude = 0.0;
            for (int64_t c = 0; c < p.k; ++c) {
                sum += double{x[c]} * w[c];
                magnitude += std::fabs(double{x[c]} * w[c]);
            }
            const double tol =
                (2.0 * p.k + 32.0) * u * magnitude * (1.0 + out_rel) + out_rel * std::fabs(sum);
            if (!(std::fabs(got.values[at] - sum) <= tol)) {
                ADD_FAILURE() << what << ": y[" << i << ", " << j << "] is " << got.values[at]
                              << ", want " << sum << " (tolerance " << tol << ")";
                ++failures;
            }
        }
    }
}

// Runs p twice, as a bare launch and with the device's numbers as CudaOps launches it (at up to 8
// rows, launches of at most two waves spaced over the SMs; at 9..16, the kernel built for 2 CTAs
// per SM where the tiles fit two waves): both match the reference, and each other bit for bit.
void run_and_check(const Problem& p) {
    const GemvDevice device = testing::must(gemv_device());
    const DeviceProblem bare = upload_problem(p);
    const DeviceProblem with = upload_problem(p);
    GemvParams with_params = params_of(p, with);
    with_params.device = &device;
    testing::must_ok(gemv(params_of(p, bare), nullptr));
    testing::must_ok(gemv(with_params, nullptr));
    for (size_t s = 0; s < p.segments.size(); ++s) {
        if (p.segments[s].n == 0) continue;
        SCOPED_TRACE("segment " + std::to_string(s));
        expect_segment_matches(p, s, bare.y[s]);
        expect_segment_matches(p, s, with.y[s]);
        const size_t bytes = bare.y[s].size_bytes();
        EXPECT_TRUE(download<uint8_t>(bare.y[s], bytes) == download<uint8_t>(with.y[s], bytes));
    }
}

struct Shape {
    int64_t n;
    int64_t k;
    DType y_dtype;
    bool strided;  // ldx > k (x a column slice of wider rows) and ldy > n (odd)
};

void PrintTo(const Shape& s, std::ostream* os) {
    *os << "n " << s.n << ", k " << s.k << ", " << dtype_name(s.y_dtype)
        << (s.strided ? ", strided" : "");
}

using GemvParam = std::tuple<int32_t, Shape>;  // m, shape

std::string param_name(const ::testing::TestParamInfo<GemvParam>& info) {
    const auto& [m, s] = info.param;
    std::string name = "m";
    name += std::to_string(m);
    name += "_n";
    name += std::to_string(s.n);
    name += "_k";
    name += std::to_string(s.k);
    name += s.y_dtype == DType::kF32 ? "_f32" : "_bf16";
    if (s.strided) name += "_strided";
    return name;
}

class GemvTest : public ::testing::TestWithParam<GemvParam> {};

TEST_P(GemvTest, MatchesF64Reference) {
    const auto [m, s] = GetParam();
    const SegmentSpec seg{.n = s.n, .y_dtype = s.y_dtype, .ldy = s.strided ? s.n + 9 : s.n};
    run_and_check(make_problem(m, s.k, s.strided, {seg}));
}

// Every n (1: one row of a 16-row tile; 7: a ragged tile; 1024, 4096: many tiles) and k (8: one
// 16-byte chunk, only part of one warp's first quad; 200: a ragged last quad; 2312: at m = 1, ten
// 256-element slices of a row, the last of one chunk, in two whole rounds and a half; 4096, 14336:
// the model's) that matters, at every m shape of the MMA's B operand (m = 1 loads whole rows).
INSTANTIATE_TEST_SUITE_P(
    Shapes, GemvTest,
    ::testing::Combine(
        ::testing::Values(1, 2, 3, 5, 8, 9, 12, 16),
        ::testing::Values(Shape{1, 8, DType::kBF16, false}, Shape{1, 8, DType::kF32, true},
                          Shape{4096, 8, DType::kF32, false}, Shape{7, 64, DType::kF32, false},
                          Shape{1024, 64, DType::kBF16, true}, Shape{7, 200, DType::kBF16, true},
                          Shape{1024, 2312, DType::kBF16, true},
                          Shape{1024, 4096, DType::kF32, false},
                          Shape{4096, 4096, DType::kBF16, false},
                          Shape{7, 14336, DType::kF32, true},
                          Shape{1024, 14336, DType::kBF16, false})),
    param_name);

// q, k and v of one layer: three weights in separate allocations, one launch.
TEST(GemvSegments, ThreeSegmentsLikeQkv) {
    for (const int32_t m : {1, 3, 8}) {
        SCOPED_TRACE("m " + std::to_string(m));
        run_and_check(make_problem(m, 512, /*strided_x=*/true,
                                   {{.n = 1024, .ldy = 1032},
                                    {.n = 256, .y_dtype = DType::kF32},
                                    {.n = 250, .ldy = 264}}));
    }
}

// gate and up: two segments of different n, the second ending inside a tile.
TEST(GemvSegments, TwoSegmentsOfDifferentN) {
    for (const int32_t m : {2, 5}) {
        SCOPED_TRACE("m " + std::to_string(m));
        run_and_check(
            make_problem(m, 4096, /*strided_x=*/false, {{.n = 1024}, {.n = 7, .ldy = 16}}));
    }
}

// Segments smaller than one tile: each CTA's rows come from one segment only.
TEST(GemvSegments, SegmentsSmallerThanATile) {
    run_and_check(make_problem(5, 200, /*strided_x=*/false,
                               {{.n = 7, .y_dtype = DType::kF32}, {.n = 1}, {.n = 33, .ldy = 40}}));
}

TEST(GemvSegments, EmptySegmentIsSkipped) {
    run_and_check(make_problem(3, 64, /*strided_x=*/true,
                               {{.n = 20}, {.n = 0}, {.n = 9, .y_dtype = DType::kF32}}));
}

// A race between warps or CTAs would show as different bits on the same inputs (m = 1: whole-row
// loads, m = 8: quads).
TEST(GemvSegments, RepeatedRunsGiveTheSameBits) {
    for (const int32_t m : {1, 8}) {
        SCOPED_TRACE("m " + std::to_string(m));
        const Problem p = make_problem(m, 4096, /*strided_x=*/false, {{.n = 1024}, {.n = 512}});
        const DeviceProblem first = upload_problem(p);
        const DeviceProblem second = upload_problem(p);
        testing::must_ok(gemv(params_of(p, first), nullptr));
        testing::must_ok(gemv(params_of(p, second), nullptr));
        for (size_t s = 0; s < p.segments.size(); ++s) {
            const size_t bytes = first.y[s].size_bytes();
            EXPECT_TRUE(download<uint8_t>(first.y[s], bytes) ==
                        download<uint8_t>(second.y[s], bytes))
                << "segment " << s;
        }
    }
}

// The device's numbers change where CTAs run and how many one SM holds, never what they compute:
// a launch of two waves at most (256 tiles, as the o and down projections) with them (spaced at
// m <= 8, the kernel built for 2 CTAs per SM at m = 9..16) and without (neither) gives the same
// bits, and the one with them matches the reference. k: an even number of a warp's rounds of
// loads, an odd one, one ragged round, and down's 14336. The device's numbers are read as CudaOps
// reads them.
TEST(GemvSegments, LaunchWithTheDeviceGivesTheSameBits) {
    const GemvDevice device = testing::must(gemv_device());
    for (const auto& [m, k] : {std::pair{3, 4096}, std::pair{1, 3072}, std::pair{8, 200},
                               std::pair{2, 14336}, std::pair{13, 4096}, std::pair{16, 3072}}) {
        SCOPED_TRACE("m = " + std::to_string(m) + ", k = " + std::to_string(k));
        const Problem p = make_problem(m, k, /*strided_x=*/false, {{.n = 4096}});
        const DeviceProblem with = upload_problem(p);
        const DeviceProblem without = upload_problem(p);
        GemvParams with_params = params_of(p, with);
        with_params.device = &device;
        testing::must_ok(gemv(with_params, nullptr));
        testing::must_ok(gemv(params_of(p, without), nullptr));
        expect_segment_matches(p, 0, with.y[0]);
        const size_t bytes = with.y[0].size_bytes();
        EXPECT_TRUE(download<uint8_t>(with.y[0], bytes) == download<uint8_t>(without.y[0], bytes));
    }
}

class GemvArgsTest : public ::testing::Test {
  protected:
    // A valid call of two segments; each test breaks one thing.
    GemvParams valid() const {
        GemvParams p{
            .x = x_.as<bf16>(), .ldx = 64, .m = 4, .k = 64, .segments = {}, .num_segments = 2};
        p.segments[0] = {.w = w_.as<bf16>(), .y = y_.data(), .n = 64, .ldy = 64};
        p.segments[1] = {.w = w_.as<bf16>(),
                         .y = y_.as<float>() + 2048,
                         .n = 32,
                         .ldy = 32,
                         .y_dtype = DType::kF32};
        return p;
    }

    void expect_invalid(const GemvParams& p, const std::string& mentions) {
        testing::expect_invalid_argument(gemv(p, nullptr), mentions);
    }

    DeviceBuffer x_ = testing::poisoned(1 << 16);
    DeviceBuffer w_ = testing::poisoned(1 << 16);
    DeviceBuffer y_ = testing::poisoned(1 << 16);
};

TEST_F(GemvArgsTest, ValidCallRuns) {
    EXPECT_TRUE(gemv(valid(), nullptr).ok());
    testing::must_ok(cuda_status(cudaDeviceSynchronize(), "gemv"));
}

TEST_F(GemvArgsTest, NamesWhatIsWrong) {
    GemvParams p = valid();
    p.m = 0;
    expect_invalid(p, "m is 0");
    p = valid();
    p.m = kGemvMaxRows + 1;
    expect_invalid(p, "m is " + std::to_string(kGemvMaxRows + 1));
    p = valid();
    p.k = 60;
    expect_invalid(p, "k is 60, not a multiple of 8");
    p = valid();
    p.k = 0;
    expect_invalid(p, "k is 0");
    p = valid();
    p.ldx = 56;
    expect_invalid(p, "ldx 56 < k 64");
    p = valid();
    p.ldx = 68;
    expect_invalid(p, "ldx is 68");
    p = valid();
    p.x = nullptr;
    expect_invalid(p, "x is null");
    p = valid();
    p.x = x_.as<bf16>() + 1;
    expect_invalid(p, "x is not 16-byte aligned");
    p = valid();
    p.num_segments = 0;
    expect_invalid(p, "num_segments is 0");
    p = valid();
    p.num_segments = kGemvMaxSegments + 1;
    expect_invalid(p, "num_segments is 4");
    p = valid();
    p.segments[1].w = nullptr;
    expect_invalid(p, "segments[1].w is null");
    p = valid();
    p.segments[0].y = nullptr;
    expect_invalid(p, "segments[0].y is null");
    p = valid();
    p.segments[0].w = w_.as<bf16>() + 4;
    expect_invalid(p, "segments[0].w is not 16-byte aligned");
    p = valid();
    p.segments[1].y = y_.as<float>() + 2;
    expect_invalid(p, "segments[1].y is not 16-byte aligned");
    p = valid();
    p.segments[0].ldy = 63;
    expect_invalid(p, "segments[0].ldy 63 < n 64");
    p = valid();
    p.segments[1].y_dtype = DType::kF16;
    expect_invalid(p, "segments[1].y_dtype");
    p = valid();
    p.segments[1].n = -1;
    expect_invalid(p, "segments[1].n is -1");
}

TEST_F(GemvArgsTest, UnusedAndEmptySegmentsAreNotChecked) {
    GemvParams p = valid();
    p.segments[2] = {.w = nullptr, .y = nullptr, .n = 5, .ldy = 0};  // past num_segments
    EXPECT_TRUE(gemv(p, nullptr).ok());
    p.segments[1] = {.w = nullptr, .y = nullptr, .n = 0, .ldy = 0};
    EXPECT_TRUE(gemv(p, nullptr).ok());
    p.num_segments = 1;
    p.segments[0].n = 0;  // nothing to do: no launch
    EXPECT_TRUE(gemv(p, nullptr).ok());
    testing::must_ok(cuda_status(cudaDeviceSynchronize(), "gemv"));
}

}  // namespace
}  // namespace se::cuda
