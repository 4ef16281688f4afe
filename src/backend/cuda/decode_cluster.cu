// Decode attention's partitions merged inside a thread-block cluster (DecodeMerge::kCluster): the
// grid of the first pass (decode_attention.cu), launched in clusters of all num_parts partitions
// of one (KV head, sequence). Each block attends its partition as the first pass does
// (decode_pass.cuh) and keeps its partials in its own shared memory; after a cluster barrier the
// cluster's first block merges them, reading the other blocks' shared memory (distributed shared
// memory, sm_90), in the last-block merge's order (decode_merge.cuh), so the outputs are those of
// the other merges bit for bit; a second barrier keeps every block resident until the reads are
// done. No partial goes to global memory and no second kernel launches:
//
//   cluster (kv_head, seq):  block 0      block 1      ...  block n-1
//                            attend       attend            attend        (partition's keys)
//                            rows -> smem rows -> smem      rows -> smem
//                            ------------------- cluster barrier ---------------------
//                            merge rows of blocks 0 .. seq_parts-1 -> out
//                            ------------------- cluster barrier ---------------------
//
// A sequence of one partition (or none) takes the first pass's path in block 0, and the others
// leave at once: every block of a cluster decides alike, so no barrier is left half-met.
#include <cooperative_groups.h>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_cluster.h"
#include "backend/cuda/decode_pass.cuh"

namespace se::cuda::decode {
namespace {

namespace cg = cooperative_groups;

// Bytes of a block's shared memory: the first pass's, then its partial rows, f32 [group,
// kRowFloats] (16-byte aligned).
template <int kHeadDim>
constexpr int cluster_smem_bytes() {
    return Tile<kHeadDim>::kSmemBytes + kDecodeMaxGroup * decode_row_floats(kHeadDim) * 4;
}
static_assert(Tile<128>::kSmemBytes % 16 == 0 && Tile<64>::kSmemBytes % 16 == 0);

// The rows of a merging round: partition `part` of round head h lives in block `part`'s shared
// memory, at the same offset as in this block's (RoundRows' interface, decode_merge.cuh).
template <int kHeadDim>
struct ClusterRows {
    static constexpr int kDim = kHeadDim;
    float* local;  // this block's row of the round's first head
    int32_t heads;

    __device__ const float* row(int32_t part, int32_t h) const {
        float* mine = local + h * Workspace<kHeadDim>::kRowFloats;
        return cg::this_cluster().map_shared_rank(mine, static_cast<unsigned>(part));
    }
};

template <int kHeadDim>
__global__ void __launch_bounds__(kThreads, 2)
    decode_cluster_kernel(DecodeAttentionParams p, int32_t num_parts) {
    using T = Tile<kHeadDim>;
    extern __shared__ __align__(128) uint8_t smem[];
    auto* s_table = reinterpret_cast<int32_t*>(smem + T::kRingBytes);
    auto* s_rows = reinterpret_cast<float*>(smem + T::kSmemBytes);
    const int32_t kv_head = blockIdx.x;
    const int32_t seq = blockIdx.y;
    const int32_t part = blockIdx.z;  // = the block's rank in its cluster
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t kv_len = clamped_kv_len(p, seq, num_parts);
    const DecodePartitionBlocks blocks = decode_partition_blocks(part, p.partition, p.block_size);
    copy_table<kTableEntriesPerThread>(p, seq, blocks, s_table);
    const int32_t seq_parts = seq_partitions(kv_len, p.partition);
    const int32_t num_keys = min(kv_len - part * p.partition, p.partition);
    const TileSource src{s_table, num_keys, blocks.offset, kv_head, __ffs(p.block_size) - 1};
    if (seq_parts <= 1) {
        if (part != 0) return;
        if (kv_len == 0) {
            pdl_wait();  // the kernels before may still read the rows
            store_zeros<kHeadDim>(p, group, seq, kv_head * group, group);
            return;
        }
        attend_run<kHeadDim>(p, smem, src, seq, group, /*early=*/false, /*wait=*/true);
        store_run<kHeadDim>(p, smem, group, seq, kv_head, nullptr);
        pdl_launch_dependents();
        return;
    }
    // The early tiles and the wait as in the first pass (decode_attention.cu says why).
    if (num_keys > 0) {
        attend_run<kHeadDim>(p, smem, src, seq, group, part < seq_parts - 1, /*wait=*/true);
        store_run<kHeadDim>(p, smem, group, seq, kv_head, s_rows);
    }
    pdl_launch_dependents();  // once every block is here (decode_attention.cu says why)
    const cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every partition's rows are in its block's shared memory
    if (part == 0) {
        for (int32_t first_head = 0; first_head < group; first_head += kMergeRoundHeads) {
            __syncthreads();  // the previous round is done with the sums
            const ClusterRows<kHeadDim> rows{s_rows + first_head * Workspace<kHeadDim>::kRowFloats,
                                             min(group - first_head, kMergeRoundHeads)};
            const int32_t head = kv_head * group + first_head;
            merge_round(rows, seq_parts, p.out + (int64_t{seq} * p.num_heads + head) * kHeadDim);
        }
    }
    cluster.sync();  // no block leaves while block 0 may read its rows
}

template <int kHeadDim>
Status launch(const DecodeAttentionParams& p, int32_t num_parts, cudaStream_t stream) {
    const auto kernel = decode_cluster_kernel<kHeadDim>;
    constexpr int kSmem = cluster_smem_bytes<kHeadDim>();
    SE_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    if (num_parts > 8) {
        SE_CUDA_RETURN_IF_ERROR(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    const dim3 grid(p.num_kv_heads, p.num_seqs, num_parts);
    return cuda_status(launch_pdl_clusters(kernel, grid, dim3(1, 1, num_parts), dim3(kThreads),
                                           kSmem, stream, p, num_parts),
                       "decode_attention (cluster merge)");
}

}  // namespace

Status launch_cluster(const DecodeAttentionParams& p, int32_t num_parts, cudaStream_t stream) {
    return p.head_dim == 64 ? launch<64>(p, num_parts, stream) : launch<128>(p, num_parts, stream);
}

}  // namespace se::cuda::decode
