// The probe kernel of wgmma_probe.h: one CTA of one warpgroup, built for sm_90a like the kernel
// it checks, from the same headers.
#include "sm90a/wgmma_probe.h"

#include <cstdint>

#include "backend/cuda/sm90a/barriers.cuh"
#include "backend/cuda/sm90a/prefill_wg_math.cuh"
#include "backend/cuda/sm90a/wgmma.cuh"
#include "backend/cuda/sm90a/wgmma_layout.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda::testing {
namespace {

using namespace se::cuda::sm90a;  // NOLINT(google-build-using-namespace): a test of that namespace

constexpr int kRows = 128;  // rows of every tile, as in the kernel

template <int kHeadDim>
constexpr uint32_t kTileBytes = kRows* kHeadDim * 2;

// One row-major [128, head_dim] bf16 matrix into the swizzled slabs of wgmma_layout.h.
template <int kHeadDim>
__device__ void fill_tile(uint8_t* tile, const bf16* src) {
    constexpr int kChunks = kHeadDim / 8;
    for (int i = static_cast<int>(threadIdx.x); i < kRows * kChunks; i += 128) {
        const int row = i / kChunks;
        const int chunk = i % kChunks;
        *reinterpret_cast<uint4*>(tile + swizzled_offset<kRows>(row, chunk)) =
            *reinterpret_cast<const uint4*>(src + row * kHeadDim + chunk * 8);
    }
}

// d[4 i + 2 h + e] is (row 16 w + g + 8 h, col 8 i + 2 t + e) of a row-major [64, kCols] matrix.
template <int kCols>
__device__ void store_acc(float* dst, const float (&d)[kCols / 2]) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int warp = static_cast<int>(threadIdx.x / 32);
#pragma unroll
    for (int i = 0; i < kCols / 8; ++i) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 16 * warp + lane / 4 + 8 * (r / 2);
            const int col = 8 * i + 2 * (lane % 4) + r % 2;
            dst[row * kCols + col] = d[4 * i + r];
        }
    }
}

template <int kHeadDim, bool kFull>
__global__ void __launch_bounds__(128, 1) wgmma_probe_kernel(const WgmmaProbeParams p) {
    extern __shared__ __align__(1024) uint8_t smem[];
    const uint32_t raw = smem_addr(smem);
    uint8_t* a_tile = smem + (((raw + kAtomBytes - 1) & ~uint32_t{kAtomBytes - 1}) - raw);
    uint8_t* b_tile = a_tile + kTileBytes<kHeadDim>;
    uint8_t* v_tile = b_tile + kTileBytes<kHeadDim>;
    fill_tile<kHeadDim>(a_tile, p.a);
    fill_tile<kHeadDim>(b_tile, p.b);
    fill_tile<kHeadDim>(v_tile, p.v);
    fence_proxy_async();  // st.shared above, wgmma reads below
    __syncthreads();

    const uint64_t a_desc = k_major_desc(smem_addr(a_tile) + p.a_row_offset * kRowBytes);
    const uint64_t b_desc = k_major_desc(smem_addr(b_tile));
    const uint64_t v_desc = mn_major_desc<kRows>(smem_addr(v_tile));
    Scores s;
    wgmma_fence();
    if constexpr (kFull) {
        issue_qk<kHeadDim>(s, a_desc, b_desc);
    } else {
        wgmma_m64n128k16_ss(s, a_desc, b_desc, 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(s);
    store_acc<128>(p.s, s);

    Weights w;
    scores_to_weights(s, w);
    OutAcc<kHeadDim> o;
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
    fence_operands(o);
    fence_operands(w);
    wgmma_fence();
    if constexpr (kFull) {
        issue_pv<kHeadDim>(o, w, v_desc);
    } else if constexpr (kHeadDim == 128) {
        wgmma_m64n128k16_rs_mn(o, w[0], v_desc);
    } else {
        wgmma_m64n64k16_rs_mn(o, w[0], v_desc);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(o);
    store_acc<kHeadDim>(p.o, o);
}

template <int kHeadDim, bool kFull>
cudaError_t launch(const WgmmaProbeParams& p) {
    constexpr int kSmem = 3 * kTileBytes<kHeadDim> + kAtomBytes;
    const cudaError_t e = cudaFuncSetAttribute(wgmma_probe_kernel<kHeadDim, kFull>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    if (e != cudaSuccess) return e;
    wgmma_probe_kernel<kHeadDim, kFull><<<1, 128, kSmem>>>(p);
    return cudaGetLastError();
}

}  // namespace

cudaError_t run_wgmma_probe(const WgmmaProbeParams& p) {
    if (p.head_dim == 64) return p.full ? launch<64, true>(p) : launch<64, false>(p);
    return p.full ? launch<128, true>(p) : launch<128, false>(p);
}

}  // namespace se::cuda::testing
