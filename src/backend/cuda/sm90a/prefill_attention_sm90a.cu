// Paged prefill attention on Hopper's warpgroup MMA (FlashAttention-3 style), sm_90a only.
//
// A CTA owns kPrefillTileRows = 128 packed rows of one sequence and KV head (prefill_tiles.h, the
// same cut as the mma.sync kernel) and loops over 128-key KV tiles. Its 384 threads are three
// warpgroups with one role each:
//   warpgroup 0: producer (prefill_producer.cuh), copies Q and the K/V tiles with cp.async into
//                a 2-deep ring per operand, and gives most of its registers away (40 kept);
//   warpgroups 1, 2: consumers (prefill_consumer.cuh), 64 rows each, S = Q K^T and O += P V
//                on wgmma with the softmax in between, 232 registers each.
// 40 * 128 + 232 * 256 = 64512 = 168 * 384 registers, what __launch_bounds__(384, 1) gives the
// CTA at launch (65536 / 384 rounded down to 8); setmaxnreg only moves registers between the
// warpgroups. One CTA per SM: 160 KiB of shared memory at head_dim 128 (prefill_smem.cuh).
//
// Against the mma.sync kernel (284-298 TFLOP/s on the H200 at head_dim 128): wgmma reads both
// operands of S = Q K^T and the V of P V straight from shared memory (no ldmatrix, no register
// copies of K and V), issues a 64 x 128 x 16 product per instruction and runs asynchronously,
// so one consumer's softmax overlaps the other's products (prefill_consumer.cuh); the producer's
// copies overlap both. Results do not depend on the batch: a CTA's work depends only on its
// sequence's lengths and its tile index.
#include "backend/cuda/sm90a/prefill_attention_sm90a.h"

#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/sm90a/barriers.cuh"
#include "backend/cuda/sm90a/prefill_consumer.cuh"
#include "backend/cuda/sm90a/prefill_producer.cuh"
#include "backend/cuda/sm90a/prefill_smem.cuh"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda::sm90a {
namespace {

constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumers * kWarpgroupThreads <=
              (65536 / kCtaThreads) / 8 * 8 * kCtaThreads);

template <int kHeadDim>
__global__ void __launch_bounds__(kCtaThreads, 1)
    prefill_attention_kernel(const PrefillAttentionParams p, int32_t tiles_per_seq) {
    extern __shared__ __align__(1024) uint8_t smem[];
    const PrefillCta cta = prefill_cta(blockIdx.x, p.num_seqs, tiles_per_seq);
    CtaWork w;
    w.seq = cta.seq;
    w.kv_head = static_cast<int32_t>(blockIdx.y);
    w.group = p.num_heads / p.num_kv_heads;
    const int32_t q_len = p.q_len[cta.seq];
    const int32_t kv_len = p.kv_len[cta.seq];
    w.prefix = kv_len - q_len;
    w.range = prefill_tile_range(cta.tile, q_len, kv_len, w.group, kWgmmaTileKeys);
    if (w.range.num_rows == 0) return;  // past this sequence's rows: the whole CTA leaves
    w.q_start = p.q_start[cta.seq];

    const PrefillSmem<kHeadDim> s{(smem_addr(smem) + kAtomBytes - 1) & ~uint32_t{kAtomBytes - 1}};
    if (threadIdx.x == 0) {
        mbarrier_init(s.q_full(), kWarpgroupThreads);
        for (int stage = 0; stage < kStages; ++stage) {
            mbarrier_init(s.k_full(stage), kWarpgroupThreads);  // producer threads' cp.async
            mbarrier_init(s.v_full(stage), kWarpgroupThreads);
            mbarrier_init(s.k_empty(stage), kConsumers * kWarpgroupThreads);  // consumer threads
            mbarrier_init(s.v_empty(stage), kConsumers * kWarpgroupThreads);
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    // Read from lane 0, the role is visibly uniform across each warp: ptxas serialises wgmmas in
    // code it cannot prove warpgroup-uniform (C7520).
    const int warpgroup =
        __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / kWarpgroupThreads), 0);
    if (warpgroup == 0) {
        setmaxnreg_dec<kProducerRegs>();
        run_producer<kHeadDim>(p, s, w);
    } else {
        setmaxnreg_inc<kConsumerRegs>();
        run_consumer<kHeadDim>(p, s, w, warpgroup - 1);
    }
}

template <int kHeadDim>
cudaError_t launch(const PrefillAttentionParams& p, dim3 grid, int32_t tiles_per_seq,
                   cudaStream_t stream) {
    constexpr int kSmem = static_cast<int>(PrefillSmem<kHeadDim>::kAllocBytes);
    const cudaError_t e = cudaFuncSetAttribute(prefill_attention_kernel<kHeadDim>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    if (e != cudaSuccess) return e;
    prefill_attention_kernel<kHeadDim><<<grid, kCtaThreads, kSmem, stream>>>(p, tiles_per_seq);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_prefill_attention(const PrefillAttentionParams& p, int32_t tiles_per_seq,
                                     cudaStream_t stream) {
    const dim3 grid(static_cast<uint32_t>(int64_t{p.num_seqs} * tiles_per_seq),
                    static_cast<uint32_t>(p.num_kv_heads));
    if (p.head_dim == 64) return launch<64>(p, grid, tiles_per_seq, stream);
    return launch<128>(p, grid, tiles_per_seq, stream);
}

}  // namespace se::cuda::sm90a
