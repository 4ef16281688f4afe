// Paged prefill attention on Hopper's warpgroup MMA (FlashAttention-3 style), sm_90a only.
//
// A CTA owns kPrefillTileRows = 128 packed rows of one sequence and KV head (prefill_tiles.h, the
// same cut as the mma.sync kernel) and loops over 128-key KV tiles. Its 384 threads are three
// warpgroups with one role each:
//   warpgroup 0: producer (prefill_producer.cuh), copies Q and the K/V tiles into a ring per
//                operand, and gives most of its registers away (40 kept);
//   warpgroups 1, 2: consumers, 64 rows each, S = Q K^T and O += P V on wgmma with the softmax in
//                between, 232 registers each.
// 40 * 128 + 232 * 256 = 64512 = 168 * 384 registers, what __launch_bounds__(384, 1) gives the
// CTA at launch (65536 / 384 rounded down to 8); setmaxnreg only moves registers between the
// warpgroups. One CTA per SM: 160 or 192 KiB of shared memory at head_dim 128 (prefill_smem.cuh).
//
// Variants (WgmmaVariant; each its own instantiation, all giving the same bits):
//   kPingPong    cp.async producer, 2 + 2 ring slots; the two consumers ping-pong on named
//                barriers (prefill_consumer.cuh), so one's softmax overlaps the other's
//                products, but ptxas serialises each consumer's own P V with its softmax.
//                Measured on the H200 (GQA 32/8, head_dim 128): 405 / 440 / 434 TFLOP/s at 8K,
//                32K causal and an 8K chunk over 24K.
//   kOverlap     + a consumer's P(t-1) V(t-1) runs under its own exponentials of S(t)
//                (prefill_consumer_overlap.cuh), 2 + 3 ring slots. Expected +10-15% (FA3's
//                ablation puts intra-warpgroup overlap at +13% over ping-pong alone):
//                ~450 / ~490 / ~485.
//   kOverlapTma  + the full K/V tiles by TMA, one box per page and 64-dim slab
//                (prefill_producer.cuh, kv_tensor_maps.h): the producer's ~540 instructions per
//                warp and tile (32 cp.async and their addressing, a third of each SM
//                sub-partition's issue slots next to the two consumer warps) become ~20, and the
//                consumers' proxy fences go. Expected another +10-15%: ~510 / ~550 / ~545.
//
// Results do not depend on the batch: a CTA's work depends only on its sequence's lengths and
// its tile index.
#include "backend/cuda/sm90a/prefill_attention_sm90a.h"

#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/sm90a/barriers.cuh"
#include "backend/cuda/sm90a/kv_tensor_maps.h"
#include "backend/cuda/sm90a/prefill_consumer.cuh"
#include "backend/cuda/sm90a/prefill_consumer_overlap.cuh"
#include "backend/cuda/sm90a/prefill_producer.cuh"
#include "backend/cuda/sm90a/prefill_smem.cuh"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda::sm90a {
namespace {

constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumers * kWarpgroupThreads <=
              (65536 / kCtaThreads) / 8 * 8 * kCtaThreads);

__host__ __device__ constexpr bool overlaps(WgmmaVariant v) {
    switch (v) {
        case WgmmaVariant::kPingPong:
            return false;
        case WgmmaVariant::kOverlap:
        case WgmmaVariant::kOverlapTma:
            return true;
    }
    return false;
}

__host__ __device__ constexpr bool uses_tma(WgmmaVariant v) {
    return v == WgmmaVariant::kOverlapTma;
}

// The overlapped consumer releases V one step later (prefill_consumer_overlap.cuh): one V slot
// more.
template <int kHeadDim, WgmmaVariant kVariant>
using SmemOf = PrefillSmem<kHeadDim, kStages, overlaps(kVariant) ? kStages + 1 : kStages>;

// The tiles the producer copies by cp.async: the last one when it is partial (keys past end_key
// must be zeros), or all of them without TMA.
__device__ __forceinline__ int32_t first_copied_tile(const PrefillTileRange& r, bool tma) {
    if (!tma) return 0;
    return r.end_key % kWgmmaTileKeys != 0 ? r.num_kv_tiles - 1 : r.num_kv_tiles;
}

template <int kHeadDim, WgmmaVariant kVariant>
__global__ void __launch_bounds__(kCtaThreads, 1)
    prefill_attention_kernel(const PrefillAttentionParams p, int32_t tiles_per_seq,
                             const __grid_constant__ KvTensorMaps maps) {
    using Smem = SmemOf<kHeadDim, kVariant>;
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
    w.first_copied_tile = first_copied_tile(w.range, uses_tma(kVariant));

    const Smem s{(smem_addr(smem) + kAtomBytes - 1) & ~uint32_t{kAtomBytes - 1}};
    if (threadIdx.x == 0) {
        mbarrier_init(s.q_full(), kWarpgroupThreads);
        // Full barriers: the 128 producer threads' arrivals (cp.async, or TMA's announcing one
        // and 127 plain ones); empty barriers: every consumer thread's.
        for (int stage = 0; stage < Smem::kKStages; ++stage) {
            mbarrier_init(s.k_full(stage), kWarpgroupThreads);
            mbarrier_init(s.k_empty(stage), kConsumers * kWarpgroupThreads);
        }
        for (int stage = 0; stage < Smem::kVStages; ++stage) {
            mbarrier_init(s.v_full(stage), kWarpgroupThreads);
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
        run_producer<kHeadDim, uses_tma(kVariant)>(p, s, w, maps);
    } else {
        setmaxnreg_inc<kConsumerRegs>();
        if constexpr (overlaps(kVariant)) {
            run_overlap_consumer<kHeadDim>(p, s, w, warpgroup - 1);
        } else {
            run_consumer<kHeadDim>(p, s, w, warpgroup - 1);
        }
    }
}

template <int kHeadDim, WgmmaVariant kVariant>
cudaError_t launch(const PrefillAttentionParams& p, dim3 grid, int32_t tiles_per_seq,
                   cudaStream_t stream) {
    KvTensorMaps maps{};
    if constexpr (uses_tma(kVariant)) {
        const cudaError_t e = encode_kv_tensor_maps(p, maps);
        if (e != cudaSuccess) return e;
    }
    constexpr int kSmem = static_cast<int>(SmemOf<kHeadDim, kVariant>::kAllocBytes);
    const auto kernel = prefill_attention_kernel<kHeadDim, kVariant>;
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    if (e != cudaSuccess) return e;
    kernel<<<grid, kCtaThreads, kSmem, stream>>>(p, tiles_per_seq, maps);
    return cudaGetLastError();
}

template <WgmmaVariant kVariant>
cudaError_t launch_variant(const PrefillAttentionParams& p, dim3 grid, int32_t tiles_per_seq,
                           cudaStream_t stream) {
    if (p.head_dim == 64) return launch<64, kVariant>(p, grid, tiles_per_seq, stream);
    return launch<128, kVariant>(p, grid, tiles_per_seq, stream);
}

}  // namespace

cudaError_t launch_prefill_attention(const PrefillAttentionParams& p, int32_t tiles_per_seq,
                                     WgmmaVariant variant, cudaStream_t stream) {
    const dim3 grid(static_cast<uint32_t>(int64_t{p.num_seqs} * tiles_per_seq),
                    static_cast<uint32_t>(p.num_kv_heads));
    switch (variant) {
        case WgmmaVariant::kPingPong:
            return launch_variant<WgmmaVariant::kPingPong>(p, grid, tiles_per_seq, stream);
        case WgmmaVariant::kOverlap:
            return launch_variant<WgmmaVariant::kOverlap>(p, grid, tiles_per_seq, stream);
        case WgmmaVariant::kOverlapTma:
            return launch_variant<WgmmaVariant::kOverlapTma>(p, grid, tiles_per_seq, stream);
    }
    return cudaErrorInvalidValue;
}

}  // namespace se::cuda::sm90a
