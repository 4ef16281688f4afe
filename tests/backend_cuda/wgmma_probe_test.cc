// The wgmma building blocks of the sm_90a prefill kernel, one product at a time, against f64
// matmuls on the CPU (sm90a/wgmma_probe.h): S = A B^T with both operands K-major and 128-byte
// swizzled in shared memory, then O = bf16(S) V with S's accumulators as the A fragments in
// registers and V MN-major (transposed B). One k16 step of each (the descriptor, the swizzle and
// the fragment layouts alone), then the whole head_dim and 128-key loops of the kernel's
// issue_qk / issue_pv, for head dims 64 and 128 and both consumer warpgroups' rows of the Q tile.
// Skipped on devices other than compute capability 9.0 (sm_90a code runs nowhere else).
//
// Tolerance: products of bf16 values are exact in f32, so S differs from the f64 sum only by the
// tensor cores' f32 accumulation: at most 128 adds of one f32 rounding each, 2^-23 of sum |a b|
// apiece if every one truncated the same way (1.5e-5 of it in all); 1e-4 of sum |a b| plus 1e-5.
// O is checked against bf16(S as the GPU computed it) times V, with the same bound over sum |p v|.
// A layout mistake moves whole rows or columns: errors of the size of the values themselves
// (about 1 for S at one step, 30 times the tolerance or more everywhere).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/half.h"
#include "cuda_test_util.h"
#include "sm90a/wgmma_probe.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload_bf16;

constexpr int kRows = 128;
constexpr int kOutRows = 64;

bool device_is_sm90() {
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return false;
    return prop.major == 9 && prop.minor == 0;
}

struct ProbeCase {
    int32_t head_dim;
    int32_t a_row_offset;
    bool full;
};

void check_probe(const ProbeCase& c) {
    SCOPED_TRACE("head_dim " + std::to_string(c.head_dim) + ", rows from " +
                 std::to_string(c.a_row_offset) + (c.full ? ", full loops" : ", one k16 step"));
    const int dim = c.head_dim;
    const std::vector<float> a = testing::random_bf16_values(kRows * dim, 11);
    const std::vector<float> b = testing::random_bf16_values(kRows * dim, 12);
    const std::vector<float> v = testing::random_bf16_values(kRows * dim, 13);
    const DeviceBuffer d_a = upload_bf16(a);
    const DeviceBuffer d_b = upload_bf16(b);
    const DeviceBuffer d_v = upload_bf16(v);
    const DeviceBuffer d_s = poisoned(kOutRows * kRows * 4);
    const DeviceBuffer d_o = poisoned(kOutRows * dim * 4);
    ASSERT_EQ(testing::run_wgmma_probe({.a = d_a.as<bf16>(),
                                        .b = d_b.as<bf16>(),
                                        .v = d_v.as<bf16>(),
                                        .s = d_s.as<float>(),
                                        .o = d_o.as<float>(),
                                        .head_dim = dim,
                                        .a_row_offset = c.a_row_offset,
                                        .full = c.full}),
              cudaSuccess);
    const std::vector<float> s = download<float>(d_s, kOutRows * kRows);
    const std::vector<float> o = download<float>(d_o, kOutRows * dim);

    const int qk_dims = c.full ? dim : 16;
    const int pv_keys = c.full ? kRows : 16;
    int failures = 0;
    for (int r = 0; r < kOutRows && failures < 10; ++r) {
        for (int n = 0; n < kRows && failures < 10; ++n) {
            double want = 0.0;
            double mag = 0.0;
            for (int k = 0; k < qk_dims; ++k) {
                const double term = double{a[(c.a_row_offset + r) * dim + k]} * b[n * dim + k];
                want += term;
                mag += std::fabs(term);
            }
            const float got = s[r * kRows + n];
            if (!(std::fabs(got - want) <= 1e-4 * mag + 1e-5)) {
                ADD_FAILURE() << "S[" << r << "][" << n << "]: got " << got << ", want " << want;
                ++failures;
            }
        }
    }
    for (int r = 0; r < kOutRows && failures < 10; ++r) {
        for (int d = 0; d < dim && failures < 10; ++d) {
            double want = 0.0;
            double mag = 0.0;
            for (int key = 0; key < pv_keys; ++key) {
                const double p = bf16_to_f32(f32_to_bf16(s[r * kRows + key]));
                want += p * v[key * dim + d];
                mag += std::fabs(p * v[key * dim + d]);
            }
            const float got = o[r * dim + d];
            if (!(std::fabs(got - want) <= 1e-4 * mag + 1e-5)) {
                ADD_FAILURE() << "O[" << r << "][" << d << "]: got " << got << ", want " << want;
                ++failures;
            }
        }
    }
}

TEST(WgmmaProbe, OneStepOfEachProduct) {
    if (!device_is_sm90()) GTEST_SKIP() << "wgmma needs compute capability 9.0";
    for (int32_t dim : {64, 128}) {
        for (int32_t offset : {0, 64}) check_probe({dim, offset, false});
    }
}

TEST(WgmmaProbe, WholeHeadDimAndKeyLoops) {
    if (!device_is_sm90()) GTEST_SKIP() << "wgmma needs compute capability 9.0";
    for (int32_t dim : {64, 128}) {
        for (int32_t offset : {0, 64}) check_probe({dim, offset, true});
    }
}

}  // namespace
}  // namespace se::cuda
