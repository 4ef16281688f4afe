// Decode attention over whole sequences (decode_whole_rule.h): one block per (KV head, sequence),
// every query head of the group; kDecodeWholeWarps warps a block, one block an SM, or two an SM
// (p.whole_two_per_sm). The block copies the sequence's block-table entries up to max_kv_len to
// shared memory (one load each, whatever the sequence's length, so that they overlap the
// length's load), then each warp streams tiles w, w + kWarps, ... of the sequence through its
// 3-stage cp.async ring as the split's blocks do (decode_pass.cuh), its first tiles while the
// previous kernel ends where they hold no key of this step, and the block merges its warps by
// log-sum-exp into the output rows. One an SM, a block asks for more shared memory than it uses
// (kDecodeWholeOneAnSmSmem), so that no SM takes a second.
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_pass.cuh"
#include "backend/cuda/decode_whole.h"
#include "backend/cuda/decode_whole_rule.h"

namespace se::cuda::decode {
namespace {

// The shared memory a block uses: its warps' rings, then the sequence's table.
template <int kHeadDim>
constexpr int whole_smem_bytes() {
    return kDecodeWholeWarps * Tile<kHeadDim>::kWarpBytes + kDecodeWholeMaxTableEntries * 4;
}

// Two blocks share an SM's 227 KB of shared memory (1 KB reserved each); one that asks for
// kDecodeWholeOneAnSmSmem has its SM to itself.
static_assert(2 * (whole_smem_bytes<128>() + 1024) <= 227 * 1024, "two blocks fit an SM");
static_assert(whole_smem_bytes<128>() <= kDecodeWholeOneAnSmSmem, "a block fits its spacing");

template <int kHeadDim>
__global__ void __launch_bounds__(kDecodeWholeWarps * 32, 2)
    decode_whole_kernel(DecodeAttentionParams p) {
    constexpr int kBlockWarps = kDecodeWholeWarps;
    constexpr int kBlockThreads = kBlockWarps * 32;
    constexpr int kTablePerThread = kDecodeWholeMaxTableEntries / kBlockThreads;
    static_assert(kDecodeWholeMaxTableEntries % kBlockThreads == 0, "threads copy entries evenly");
    extern __shared__ __align__(128) uint8_t smem[];
    auto* s_table = reinterpret_cast<int32_t*>(smem + kBlockWarps * Tile<kHeadDim>::kWarpBytes);
    const int32_t kv_head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int32_t group = p.num_heads / p.num_kv_heads;
    // Lengths and tables come from the host's copy, which no kernel writes (pdl.cuh).
    const DecodePartitionBlocks blocks = run_blocks(0, p.max_kv_len, p.block_size);
    copy_table<kTablePerThread, kBlockThreads>(p, seq, blocks, s_table);
    const int32_t kv_len = min(max(p.kv_lens[seq], 0), p.max_kv_len);
    if (kv_len == 0) {
        pdl_wait();  // the kernels before may still read the rows
        store_zeros<kHeadDim>(p, group, seq, kv_head * group, group);
        return;
    }
    const TileSource src{s_table, kv_len, 0, kv_head, __ffs(p.block_size) - 1};
    // The tiles copied before the wait (each warp's first kStages - 1) hold only keys of earlier
    // steps, which no kernel of this step writes, unless the sequence's newest key (the one this
    // step wrote) is among them (decode_attention.cu says why the rest is safe).
    const bool early = kv_len > (kStages - 1) * kBlockWarps * kTileKeys;
    attend_run<kHeadDim, kBlockWarps>(p, smem, src, seq, group, early, /*wait=*/true);
    store_run<kHeadDim, kBlockWarps>(p, smem, group, seq, kv_head, nullptr);
    // The next kernel may launch once every block is here (decode_attention.cu says why).
    pdl_launch_dependents();
}

template <int kHeadDim>
Status launch(const DecodeAttentionParams& p, cudaStream_t stream) {
    const auto kernel = decode_whole_kernel<kHeadDim>;
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kDecodeWholeOneAnSmSmem));
    const int smem = p.whole_two_per_sm ? whole_smem_bytes<kHeadDim>() : kDecodeWholeOneAnSmSmem;
    return cuda_status(launch_pdl(kernel, dim3(p.num_kv_heads, p.num_seqs),
                                  dim3(kDecodeWholeWarps * 32), smem, stream, p),
                       "decode_attention (whole sequences)");
}

}  // namespace

Status launch_whole(const DecodeAttentionParams& p, cudaStream_t stream) {
    return p.head_dim == 64 ? launch<64>(p, stream) : launch<128>(p, stream);
}

}  // namespace se::cuda::decode
