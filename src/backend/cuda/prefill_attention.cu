// Paged prefill attention (prefill_attention.h), FlashAttention-2 style on mma.sync.
//
// A CTA owns kPrefillTileRows = 128 packed rows of one sequence and KV head (prefill_tiles.h);
// its 4 warps own 32 rows each (prefill_warp_math.cuh) and loop over 64-key KV tiles gathered
// from the paged cache (prefill_tile_load.cuh). Why this shape, against the first version (64
// rows, 16 per warp, one K and one V buffer, 189-196 TFLOP/s at 8K/32K causal on the H200):
//
//  * 32 rows per warp: each K/V fragment read from shared memory feeds 4 MMAs, not 2. At 16 rows
//    per warp an m16n8k16 MMA needed 0.5 ldmatrix.x4 (512 bytes, 4 cycles of the SM's 128 B/clk)
//    on average, more than the tensor cores take for it. Now, per warp and 32 keys, QK reads
//    16 Q + 16 K fragments for 64 MMAs and PV 16 V fragments for 64: 0.375 per MMA, 1.33x less
//    (0.31 with 64-key score steps, which spilled).
//  * 128 rows per CTA: every K/V tile gathered from L2 serves twice the rows (half the traffic
//    and half the cp.async and table work per FLOP).
//  * Registers (head_dim 128: 255, no spills): the 128-float accumulator stays; Q is reloaded
//    from shared memory per k-step (FA2 does the same), scores are computed 32 keys at a time
//    (64 spilled), and the causal last keys are recomputed per masked tile.
//    __launch_bounds__(128, 2) keeps 2 CTAs (8 warps) per SM, as before, with 96 KiB of shared
//    memory each at head_dim 128 (48 KiB at 64).
//  * K and V double-buffered, one barrier per tile: tile j + 1 is copied while tile j's QK,
//    softmax and PV run; before, K(j + 1) had only PV(j) to land under and every tile paid two
//    barriers.
//  * Block-table lookups once per (thread, key row) for K and V together: 8 per thread and tile
//    instead of 16 (and the CTA does half as many tiles per row).
//  * Diagonal: a warp skips the 32-key steps that are fully masked for all its rows (exact: they
//    would add zero weights and a correction of 1), so the causal work per warp is its own.
//
// Expected on the H200 (GQA 32/8, head_dim 128), against 189 / 196 / 195 TFLOP/s before: about
// 260 at 8K causal (diagonal tiles and the tail wave of 2048 CTAs over 264 slots weigh more),
// about 280 at 32K causal and at the 8K chunk over a 24K prefix (no diagonal to speak of). The
// reasoning: ldmatrix traffic per MMA falls 1.33x, L2 gathers per FLOP 2x, and the copies no
// longer stall QK, so the kernel moves towards mma.sync's issue rate (well-tuned FA2 kernels run
// 330-380 on H100); the 32-key score steps and the per-step Q reloads keep it below that. Versus
// PyTorch SDPA (624 / 615 / 350): about 0.42 / 0.46 / 0.8. The rest needs wgmma and TMA (sm_90a).
//
// On compute capability 9.0, prefill_attention() runs the wgmma kernel instead
// (sm90a/prefill_attention_sm90a.cu; prefill_kernel.h chooses); this one stays the kernel of
// every other device.
#include "backend/cuda/prefill_attention.h"

#include <cmath>
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/prefill_kernel.h"
#include "backend/cuda/prefill_tile_load.cuh"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/prefill_warp_math.cuh"
#include "backend/cuda/sm90a/prefill_attention_sm90a.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda {
namespace {

constexpr int kMinBlockSize = 8;
constexpr int kMaxBlockSize = 256;
constexpr int kStages = 2;  // K and V buffers: tile j + 1 lands while tile j is used
constexpr float kLog2e = 1.4426950408889634f;

// Dynamic shared memory of a CTA: Q, then kStages K tiles, then kStages V tiles, each swizzled
// (tile_layout.h). Tiles are found by arithmetic, not through an array of pointers that a
// run-time stage index would put on the stack.
template <int kHeadDim>
struct SharedTiles {
    static constexpr int kQElems = kPrefillTileRows * kHeadDim;   // bf16 [tile rows, head_dim]
    static constexpr int kKvElems = kPrefillTileKeys * kHeadDim;  // bf16 [tile keys, head_dim]
    static constexpr int kBytes = (kQElems + 2 * kStages * kKvElems) * 2;

    bf16* base;

    __device__ bf16* q() const { return base; }
    __device__ bf16* k(int32_t tile) const { return base + kQElems + (tile % kStages) * kKvElems; }
    __device__ bf16* v(int32_t tile) const {
        return base + kQElems + (kStages + tile % kStages) * kKvElems;
    }
};

// This thread's rows of the warp's output, divided by their softmax sums; rows past the tile's
// num_rows are not written.
template <int kHeadDim>
__device__ __forceinline__ void store_rows(const PrefillAttentionParams& p, int32_t q_start,
                                           const PrefillTileRange& range, int32_t group,
                                           int32_t kv_head, const PrefillAcc<kHeadDim>& o,
                                           const PrefillRowState& row_sum) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
#pragma unroll
    for (int mt = 0; mt < kPrefillMTiles; ++mt) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            float sum = row_sum[mt][i];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // 0: no visible key, a zero row
            const int row = warp * kPrefillWarpRows + mt * 16 + lane / 4 + 8 * i;
            if (row >= range.num_rows) continue;
            const int32_t packed = range.first_row + row;
            const int32_t head = kv_head * group + packed % group;
            bf16* dst = p.out + (int64_t{q_start} + packed / group) * p.out_row_stride +
                        int64_t{head} * kHeadDim + 2 * (lane % 4);
#pragma unroll
            for (int db = 0; db < kHeadDim / 8; ++db) {
                *reinterpret_cast<uint32_t*>(dst + db * 8) =
                    pack_bf16x2(o[mt][db][2 * i] * inv, o[mt][db][2 * i + 1] * inv);
            }
        }
    }
}

// mask_tile for the scores of keys from `first_key` on, with the last keys of this thread's rows
// recomputed per masked tile rather than held in registers across the loop.
__device__ __forceinline__ void mask_rows(PrefillScores& scores, const PrefillTileRange& range,
                                          int32_t group, int32_t prefix, int32_t first_key) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    int32_t last_key[kPrefillMTiles][2];
#pragma unroll
    for (int mt = 0; mt < kPrefillMTiles; ++mt) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int32_t row = warp * kPrefillWarpRows + mt * 16 + lane / 4 + 8 * i;
            last_key[mt][i] = range.last_key(range.first_row + row, group, prefix);
        }
    }
    mask_tile(scores, first_key, last_key);
}

// One CTA: kPrefillTileRows packed rows of one sequence and one KV head (prefill_tiles.h). One
// barrier per KV tile, then the copy of the next tile into the other buffers, then this tile:
//   copy Q, KV(0) | wait, sync | copy KV(1) | QK(0) softmax PV(0) | wait, sync | copy KV(2) | ...
// The barrier both publishes tile j (every thread waited for its own copies) and frees buffer
// (j + 1) % 2: every warp finished tile j - 1 before reaching it.
template <int kHeadDim>
__global__ void __launch_bounds__(kPrefillThreads, 2)
    prefill_attention_kernel(PrefillAttentionParams p, int32_t tiles_per_seq) {
    extern __shared__ __align__(128) uint8_t smem[];
    const SharedTiles<kHeadDim> s{reinterpret_cast<bf16*>(smem)};
    const PrefillCta cta = prefill_cta(blockIdx.x, p.num_seqs, tiles_per_seq);
    const int32_t kv_head = blockIdx.y;
    const int32_t q_len = p.q_len[cta.seq];
    const int32_t kv_len = p.kv_len[cta.seq];
    const int32_t prefix = kv_len - q_len;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const PrefillTileRange range = prefill_tile_range(cta.tile, q_len, kv_len, group);
    if (range.num_rows == 0) return;  // past this sequence's rows
    const int32_t q_start = p.q_start[cta.seq];
    const KvSource src{p.block_tables + int64_t{cta.seq} * p.block_table_stride,
                       __ffs(p.block_size) - 1, int64_t{p.num_kv_heads} * kHeadDim,
                       int64_t{kv_head} * kHeadDim};

    load_q_tile<kHeadDim>(s.q(), p, q_start, range, group, kv_head);
    if (range.num_kv_tiles > 0) load_kv_tiles<kHeadDim>(s.k(0), s.v(0), p, src, 0, range.end_key);
    cp_async_commit();

    const int warp = threadIdx.x / 32;
    const int32_t warp_end_key = prefill_warp_end_key(range, warp, group, prefix);
    PrefillAcc<kHeadDim> o = {};
    PrefillRowState row_max = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}};
    PrefillRowState row_sum = {};
    const float scale_log2 = p.scale * kLog2e;
    const bf16* q_warp = s.q() + warp * kPrefillWarpRows * kHeadDim;

    for (int32_t j = 0; j < range.num_kv_tiles; ++j) {
        cp_async_wait_all();
        __syncthreads();
        const int32_t first_key = j * kPrefillTileKeys;
        if (j + 1 < range.num_kv_tiles) {
            load_kv_tiles<kHeadDim>(s.k(j + 1), s.v(j + 1), p, src, first_key + kPrefillTileKeys,
                                    range.end_key);
            cp_async_commit();
        }
#pragma unroll 1
        for (int32_t sub = 0; sub < kPrefillTileKeys / kPrefillSubKeys; ++sub) {
            const int32_t sub_key = first_key + sub * kPrefillSubKeys;
            if (sub_key >= warp_end_key) break;  // masked for every row of the warp
            const int sub_row = sub * kPrefillSubKeys * kHeadDim;
            PrefillScores scores;
            qk_tile<kHeadDim>(scores, q_warp, s.k(j) + sub_row);
            if (j >= range.num_full_kv_tiles) mask_rows(scores, range, group, prefix, sub_key);
            PrefillWeights pa;
            softmax_tile<kHeadDim>(scores, row_max, row_sum, o, scale_log2, pa);
            pv_tile<kHeadDim>(o, pa, s.v(j) + sub_row);
        }
    }
    cp_async_wait_all();  // no copy may land in shared memory after the CTA is gone
    store_rows<kHeadDim>(p, q_start, range, group, kv_head, o, row_sum);
}

template <int kHeadDim>
Status launch(const PrefillAttentionParams& p, dim3 grid, int32_t tiles_per_seq,
              cudaStream_t stream) {
    constexpr int kSmem = SharedTiles<kHeadDim>::kBytes;
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        prefill_attention_kernel<kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    prefill_attention_kernel<kHeadDim><<<grid, kPrefillThreads, kSmem, stream>>>(p, tiles_per_seq);
    return launch_status("prefill_attention");
}

Status check_params(const PrefillAttentionParams& p) {
    constexpr std::string_view kName = "prefill_attention";
    if (p.head_dim != 64 && p.head_dim != 128) {
        return unsupported("prefill_attention: head_dim " + std::to_string(p.head_dim) +
                           " (built for 64 and 128)");
    }
    if (p.num_kv_heads <= 0 || p.num_kv_heads > 65535 || p.num_heads % p.num_kv_heads != 0 ||
        p.num_heads / p.num_kv_heads > kPrefillMaxGroup) {
        return unsupported("prefill_attention: " + std::to_string(p.num_heads) + " heads over " +
                           std::to_string(p.num_kv_heads) + " KV heads (groups of at most " +
                           std::to_string(kPrefillMaxGroup) + ")");
    }
    const bool pow2 = (p.block_size & (p.block_size - 1)) == 0;
    if (!pow2 || p.block_size < kMinBlockSize || p.block_size > kMaxBlockSize) {
        return unsupported("prefill_attention: block_size " + std::to_string(p.block_size) +
                           " (a power of two in [8, 256])");
    }
    const int64_t width = int64_t{p.num_heads} * p.head_dim;
    if (p.q_row_stride < width) {
        return invalid_argument("prefill_attention: q_row_stride " +
                                std::to_string(p.q_row_stride));
    }
    if (p.out_row_stride < width) {
        return invalid_argument("prefill_attention: out_row_stride " +
                                std::to_string(p.out_row_stride));
    }
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "q_row_stride", p.q_row_stride));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "out_row_stride", p.out_row_stride));
    SE_RETURN_IF_ERROR(check_aligned(kName, "q", p.q));
    SE_RETURN_IF_ERROR(check_aligned(kName, "out", p.out));
    SE_RETURN_IF_ERROR(check_aligned(kName, "k_blocks", p.k_blocks));
    SE_RETURN_IF_ERROR(check_aligned(kName, "v_blocks", p.v_blocks));
    if (p.max_q_len < 0 || p.num_seqs < 0) {
        return invalid_argument("prefill_attention: max_q_len " + std::to_string(p.max_q_len) +
                                ", num_seqs " + std::to_string(p.num_seqs));
    }
    if (p.num_blocks < 0 || (p.num_blocks == 0 && p.num_seqs > 0 && p.max_q_len > 0)) {
        return invalid_argument("prefill_attention: num_blocks " + std::to_string(p.num_blocks) +
                                " (the blocks of k_blocks and v_blocks)");
    }
    // exp2 of scores * scale relies on the largest score giving the largest weight.
    if (!(p.scale > 0.0f) || !std::isfinite(p.scale)) {
        return invalid_argument("prefill_attention: scale " + std::to_string(p.scale) +
                                " (must be positive)");
    }
    return Status::ok_status();
}

// Compute capability 9.0 exactly: sm_90a code runs there and nowhere else. Asked per call (no
// cached global): two attribute reads that the runtime answers from its own device table, next
// to a kernel of tens of microseconds or more, and it follows whatever device is current.
Expected<bool> current_device_is_sm90() {
    int device = 0;
    SE_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    int major = 0;
    int minor = 0;
    SE_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    SE_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return major == 9 && minor == 0;
}

Status launch_wgmma(const PrefillAttentionParams& p, int32_t tiles_per_seq,
                    sm90a::WgmmaVariant variant, cudaStream_t stream) {
    return cuda_status(sm90a::launch_prefill_attention(p, tiles_per_seq, variant, stream),
                       "prefill_attention (wgmma)");
}

// The TMA kernel addresses cache slots with signed 32-bit coordinates (sm90a/kv_tensor_maps.h).
bool slots_fit_tma(const PrefillAttentionParams& p) {
    return p.num_blocks * p.block_size < (int64_t{1} << 31);
}

Status wgmma_runs(const PrefillAttentionParams& p, bool sm90) {
    if (!sm90) {
        return unsupported("prefill_attention: the wgmma kernels need compute capability 9.0");
    }
    if (!sm90a::prefill_attention_supported(p)) {
        return unsupported("prefill_attention: the wgmma kernels take head_dim 64 and 128, not " +
                           std::to_string(p.head_dim));
    }
    return Status::ok_status();
}

}  // namespace

Expected<PrefillKernel> resolve_prefill_kernel(const PrefillAttentionParams& p,
                                               PrefillKernel requested) {
    if (requested == PrefillKernel::kMmaSync) return PrefillKernel::kMmaSync;
    SE_ASSIGN_OR_RETURN(const bool sm90, current_device_is_sm90());
    const Status wgmma = wgmma_runs(p, sm90);
    switch (requested) {
        case PrefillKernel::kMmaSync:
            return PrefillKernel::kMmaSync;
        case PrefillKernel::kWgmma:
        case PrefillKernel::kWgmmaOverlap:
            SE_RETURN_IF_ERROR(wgmma);
            return requested;
        case PrefillKernel::kWgmmaTma:
            SE_RETURN_IF_ERROR(wgmma);
            if (!slots_fit_tma(p)) {
                return unsupported(
                    "prefill_attention: the TMA kernel takes fewer than 2^31 cache "
                    "slots, not num_blocks " +
                    std::to_string(p.num_blocks) + " x block_size " + std::to_string(p.block_size));
            }
            return requested;
        case PrefillKernel::kAuto:
            if (!wgmma.ok()) return PrefillKernel::kMmaSync;
            return slots_fit_tma(p) ? PrefillKernel::kWgmmaTma : PrefillKernel::kWgmmaOverlap;
    }
    return internal_error("prefill_attention: unknown PrefillKernel");
}

Status prefill_attention(const PrefillAttentionParams& p, cudaStream_t stream) {
    return prefill_attention(p, PrefillKernel::kAuto, stream);
}

Status prefill_attention(const PrefillAttentionParams& p, PrefillKernel kernel,
                         cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_params(p));
    if (p.num_seqs == 0 || p.max_q_len == 0) return Status::ok_status();
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t tiles_per_seq = prefill_tiles_per_seq(p.max_q_len, group);
    const int64_t num_ctas = int64_t{p.num_seqs} * tiles_per_seq;
    if (num_ctas > 0x7fffffff) {
        return unsupported("prefill_attention: " + std::to_string(num_ctas) +
                           " query tiles (grid x is at most 2^31 - 1)");
    }
    SE_ASSIGN_OR_RETURN(const PrefillKernel chosen, resolve_prefill_kernel(p, kernel));
    switch (chosen) {
        case PrefillKernel::kWgmma:
            return launch_wgmma(p, tiles_per_seq, sm90a::WgmmaVariant::kPingPong, stream);
        case PrefillKernel::kWgmmaOverlap:
            return launch_wgmma(p, tiles_per_seq, sm90a::WgmmaVariant::kOverlap, stream);
        case PrefillKernel::kWgmmaTma:
            return launch_wgmma(p, tiles_per_seq, sm90a::WgmmaVariant::kOverlapTma, stream);
        case PrefillKernel::kAuto:  // resolved above
        case PrefillKernel::kMmaSync:
            break;
    }
    const dim3 grid(static_cast<uint32_t>(num_ctas), p.num_kv_heads);
    if (p.head_dim == 64) return launch<64>(p, grid, tiles_per_seq, stream);
    return launch<128>(p, grid, tiles_per_seq, stream);
}

}  // namespace se::cuda
