#include "backend/cuda/prefill_attention.h"

#include <cmath>
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/prefill_tiles.h"
#include "backend/cuda/warp_mma.cuh"

namespace se::cuda {
namespace {

constexpr int kWarps = kPrefillTileRows / 16;  // a warp owns 16 rows: one MMA's M
constexpr int kThreads = kWarps * 32;
constexpr int kKeyBlocks = kPrefillTileKeys / 8;  // n-blocks of a score tile (MMA N = 8)
constexpr int kKeySteps = kPrefillTileKeys / 16;  // k-steps of P·V (MMA K = 16)
constexpr int kMinBlockSize = 8;
constexpr int kMaxBlockSize = 256;
constexpr float kLog2e = 1.4426950408889634f;

// Element offset of 16-byte chunk `chunk` of row `row` in a [rows, kHeadDim] bf16 tile in shared
// memory. Chunks are swizzled (c ^ row % 8) so that the 8 rows an ldmatrix reads at one logical
// chunk land in 8 different 16-byte bank groups, and cp.async writes stay 16-byte aligned.
template <int kHeadDim>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
    return row * kHeadDim + ((chunk ^ (row & 7)) * 8);
}

template <int kHeadDim>
struct SharedTiles {
    alignas(128) bf16 q[kPrefillTileRows * kHeadDim];  // bf16 [tile rows, head_dim], swizzled
    alignas(128) bf16 k[kPrefillTileKeys * kHeadDim];  // bf16 [tile keys, head_dim], swizzled
    alignas(128) bf16 v[kPrefillTileKeys * kHeadDim];  // bf16 [tile keys, head_dim], swizzled
};

// Where one KV head's rows of one sequence sit in the paged cache.
struct KvSource {
    const int32_t* table;  // i32 [ceil(kv_len / block_size)], the sequence's block ids
    int32_t block_shift;   // log2(block_size)
    int64_t entry_elems;   // num_kv_heads * head_dim: elements between consecutive slots
    int64_t head_offset;   // kv_head * head_dim
};

// Keys [first_key, first_key + kPrefillTileKeys) of K or V into `dst`; keys from end_key on are
// zeros (never read from the cache: their block table entries may not exist), so that P·V
// multiplies finite values by the zero weights the mask gives them.
template <int kHeadDim>
__device__ __forceinline__ void load_kv_tile(bf16* dst, const bf16* blocks, const KvSource& src,
                                             int32_t first_key, int32_t end_key) {
    constexpr int kChunks = kHeadDim / 8;
    constexpr int kRowsPerPass = kThreads / kChunks;
    const int chunk = threadIdx.x % kChunks;
    const int32_t block_mask = (1 << src.block_shift) - 1;
#pragma unroll
    for (int pass = 0; pass < kPrefillTileKeys / kRowsPerPass; ++pass) {
        const int row = static_cast<int>(threadIdx.x) / kChunks + pass * kRowsPerPass;
        const int32_t key = first_key + row;
        const bool valid = key < end_key;
        const bf16* from = blocks;
        if (valid) {
            const int64_t slot = (int64_t{src.table[key >> src.block_shift]} << src.block_shift) |
                                 (key & block_mask);
            from = blocks + slot * src.entry_elems + src.head_offset + chunk * 8;
        }
        cp_async_16(smem_addr(dst + tile_offset<kHeadDim>(row, chunk)), from, valid);
    }
}

// The CTA's packed query rows (prefill_tiles.h) into `dst`; rows past the tile's num_rows are
// zeros.
template <int kHeadDim>
__device__ __forceinline__ void load_q_tile(bf16* dst, const PrefillAttentionParams& p,
                                            int32_t q_start, const PrefillTileRange& range,
                                            int32_t group, int32_t kv_head) {
    constexpr int kChunks = kHeadDim / 8;
    constexpr int kRowsPerPass = kThreads / kChunks;
    const int chunk = threadIdx.x % kChunks;
#pragma unroll
    for (int pass = 0; pass < kPrefillTileRows / kRowsPerPass; ++pass) {
        const int row = static_cast<int>(threadIdx.x) / kChunks + pass * kRowsPerPass;
        const bool valid = row < range.num_rows;
        const bf16* from = p.q;
        if (valid) {
            const int32_t packed = range.first_row + row;
            const int32_t head = kv_head * group + packed % group;
            from = p.q + (int64_t{q_start} + packed / group) * p.q_row_stride +
                   int64_t{head} * kHeadDim + chunk * 8;
        }
        cp_async_16(smem_addr(dst + tile_offset<kHeadDim>(row, chunk)), from, valid);
    }
}

// scores (this warp's 16 rows x 64 keys, C fragments) = q · k^T, unscaled.
template <int kHeadDim>
__device__ __forceinline__ void qk_tile(float (&scores)[kKeyBlocks][4],
                                        const uint32_t (&qa)[kHeadDim / 16][4], const bf16* k) {
    const int lane = threadIdx.x % 32;
    // ldmatrix matrices 0..3: (keys 0-7, dims lo), (keys 0-7, dims hi), (keys 8-15, lo), (8-15, hi)
    const int key_in = lane % 8 + (lane / 16) * 8;
    const int chunk_in = (lane / 8) % 2;
#pragma unroll
    for (int kb = 0; kb < kKeyBlocks; ++kb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) scores[kb][e] = 0.0f;
    }
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
#pragma unroll
        for (int pair = 0; pair < kKeyBlocks / 2; ++pair) {
            uint32_t b[4];
            ldmatrix_x4(
                b, smem_addr(k + tile_offset<kHeadDim>(pair * 16 + key_in, step * 2 + chunk_in)));
            mma_bf16_16816(scores[2 * pair], qa[step], b[0], b[1]);
            mma_bf16_16816(scores[2 * pair + 1], qa[step], b[2], b[3]);
        }
    }
}

// -inf for the keys past each of this thread's two rows' last key (rows g and g + 8).
__device__ __forceinline__ void mask_tile(float (&scores)[kKeyBlocks][4], int32_t first_key,
                                          const int32_t (&last_key)[2]) {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int kb = 0; kb < kKeyBlocks; ++kb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int32_t key = first_key + kb * 8 + 2 * t + e % 2;
            if (key > last_key[e / 2]) scores[kb][e] = -INFINITY;
        }
    }
}

// Online softmax over one score tile: updates the running max and (per-thread partial) sum of
// this thread's two rows, rescales their output accumulators, and leaves the weights as bf16 A
// fragments of P·V. Scores are unscaled; scale * log2(e) is folded into exp2.
template <int kDimBlocks>
__device__ __forceinline__ void softmax_tile(float (&scores)[kKeyBlocks][4], float (&row_max)[2],
                                             float (&row_sum)[2], float (&o)[kDimBlocks][4],
                                             float scale_log2, uint32_t (&pa)[kKeySteps][4]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        float m = row_max[i];
#pragma unroll
        for (int kb = 0; kb < kKeyBlocks; ++kb)
            m = fmaxf(m, fmaxf(scores[kb][2 * i], scores[kb][2 * i + 1]));
        // The four lanes of a quad hold the same rows.
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        // m stays -inf only while every key so far is masked for the row: keep exp2 off -inf -
        // -inf.
        const float base = m == -INFINITY ? 0.0f : m * scale_log2;
        const float correction =
            row_max[i] == -INFINITY ? 0.0f : exp2f(fmaf(row_max[i], scale_log2, -base));
        row_max[i] = m;
        row_sum[i] *= correction;
#pragma unroll
        for (int db = 0; db < kDimBlocks; ++db) {
            o[db][2 * i] *= correction;
            o[db][2 * i + 1] *= correction;
        }
#pragma unroll
        for (int kb = 0; kb < kKeyBlocks; ++kb) {
#pragma unroll
            for (int e = 2 * i; e < 2 * i + 2; ++e) {
                scores[kb][e] = exp2f(fmaf(scores[kb][e], scale_log2, -base));
                row_sum[i] += scores[kb][e];
            }
        }
    }
    // C fragments of key blocks 2s and 2s + 1 are exactly the A fragment of k-step s.
#pragma unroll
    for (int s = 0; s < kKeySteps; ++s) {
        pa[s][0] = pack_bf16x2(scores[2 * s][0], scores[2 * s][1]);
        pa[s][1] = pack_bf16x2(scores[2 * s][2], scores[2 * s][3]);
        pa[s][2] = pack_bf16x2(scores[2 * s + 1][0], scores[2 * s + 1][1]);
        pa[s][3] = pack_bf16x2(scores[2 * s + 1][2], scores[2 * s + 1][3]);
    }
}

// o (this warp's 16 rows x head_dim) += p · v.
template <int kHeadDim>
__device__ __forceinline__ void pv_tile(float (&o)[kHeadDim / 8][4],
                                        const uint32_t (&pa)[kKeySteps][4], const bf16* v) {
    const int lane = threadIdx.x % 32;
    // ldmatrix.trans matrices 0..3: (keys 0-7, dims lo), (keys 8-15, lo), (0-7, hi), (8-15, hi)
    const int key_in = lane % 8 + ((lane / 8) % 2) * 8;
    const int chunk_in = lane / 16;
#pragma unroll
    for (int s = 0; s < kKeySteps; ++s) {
#pragma unroll
        for (int pair = 0; pair < kHeadDim / 16; ++pair) {
            uint32_t b[4];
            ldmatrix_x4_trans(
                b, smem_addr(v + tile_offset<kHeadDim>(s * 16 + key_in, pair * 2 + chunk_in)));
            mma_bf16_16816(o[2 * pair], pa[s], b[0], b[1]);
            mma_bf16_16816(o[2 * pair + 1], pa[s], b[2], b[3]);
        }
    }
}

// This thread's two rows of the warp's output, divided by their softmax sums; rows past the
// tile's num_rows are not written.
template <int kHeadDim>
__device__ __forceinline__ void store_rows(const PrefillAttentionParams& p, int32_t q_start,
                                           const PrefillTileRange& range, int32_t group,
                                           int32_t kv_head, const float (&o)[kHeadDim / 8][4],
                                           const float (&row_sum)[2]) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        float sum = row_sum[i];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // 0: no visible key, a zero row
        const int row = warp * 16 + lane / 4 + 8 * i;
        if (row >= range.num_rows) continue;
        const int32_t packed = range.first_row + row;
        const int32_t head = kv_head * group + packed % group;
        bf16* dst = p.out + (int64_t{q_start} + packed / group) * p.out_row_stride +
                    int64_t{head} * kHeadDim + 2 * (lane % 4);
#pragma unroll
        for (int db = 0; db < kHeadDim / 8; ++db) {
            *reinterpret_cast<uint32_t*>(dst + db * 8) =
                pack_bf16x2(o[db][2 * i] * inv, o[db][2 * i + 1] * inv);
        }
    }
}

// One CTA: kPrefillTileRows packed rows of one sequence and one KV head (prefill_tiles.h). K and
// V have one buffer each and the copies overlap the other matrix's MMAs:
//   load V(j) | Q·K(j)^T, softmax | wait, sync | load K(j+1) | P·V(j) | wait, sync | ...
template <int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    prefill_attention_kernel(PrefillAttentionParams p, int32_t tiles_per_seq) {
    __shared__ SharedTiles<kHeadDim> s;
    const PrefillCta cta = prefill_cta(blockIdx.x, p.num_seqs, tiles_per_seq);
    const int32_t kv_head = blockIdx.y;
    const int32_t q_len = p.q_len[cta.seq];
    const int32_t kv_len = p.kv_len[cta.seq];
    const int32_t group = p.num_heads / p.num_kv_heads;
    const PrefillTileRange range = prefill_tile_range(cta.tile, q_len, kv_len, group);
    if (range.num_rows == 0) return;  // past this sequence's rows
    const int32_t q_start = p.q_start[cta.seq];
    const KvSource src{p.block_tables + int64_t{cta.seq} * p.block_table_stride,
                       __ffs(p.block_size) - 1, int64_t{p.num_kv_heads} * kHeadDim,
                       int64_t{kv_head} * kHeadDim};

    load_q_tile<kHeadDim>(s.q, p, q_start, range, group, kv_head);
    if (range.num_kv_tiles > 0) load_kv_tile<kHeadDim>(s.k, p.k_blocks, src, 0, range.end_key);
    cp_async_commit();

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    int32_t last_key[2];  // of rows g and g + 8 of the warp
    for (int i = 0; i < 2; ++i) {
        last_key[i] =
            range.last_key(range.first_row + warp * 16 + lane / 4 + 8 * i, group, kv_len - q_len);
    }
    float o[kHeadDim / 8][4] = {};
    float row_max[2] = {-INFINITY, -INFINITY};
    float row_sum[2] = {0.0f, 0.0f};
    const float scale_log2 = p.scale * kLog2e;

    cp_async_wait_all();
    __syncthreads();
    // The warp's Q rows as A fragments, kept in registers for every KV tile.
    uint32_t qa[kHeadDim / 16][4];
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
        ldmatrix_x4(qa[step], smem_addr(s.q + tile_offset<kHeadDim>(warp * 16 + lane % 16,
                                                                    step * 2 + lane / 16)));
    }

    for (int32_t j = 0; j < range.num_kv_tiles; ++j) {
        const int32_t first_key = j * kPrefillTileKeys;
        if (j > 0) {  // K(j) has landed, and every warp is done reading V(j - 1)
            cp_async_wait_all();
            __syncthreads();
        }
        load_kv_tile<kHeadDim>(s.v, p.v_blocks, src, first_key, range.end_key);
        cp_async_commit();

        float scores[kKeyBlocks][4];
        qk_tile<kHeadDim>(scores, qa, s.k);
        if (j >= range.num_full_kv_tiles) mask_tile(scores, first_key, last_key);
        uint32_t pa[kKeySteps][4];
        softmax_tile(scores, row_max, row_sum, o, scale_log2, pa);

        cp_async_wait_all();  // V(j) has landed, and every warp is done reading K(j)
        __syncthreads();
        if (j + 1 < range.num_kv_tiles) {
            load_kv_tile<kHeadDim>(s.k, p.k_blocks, src, first_key + kPrefillTileKeys,
                                   range.end_key);
            cp_async_commit();
        }
        pv_tile<kHeadDim>(o, pa, s.v);
    }
    store_rows<kHeadDim>(p, q_start, range, group, kv_head, o, row_sum);
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
    // exp2 of scores * scale relies on the largest score giving the largest weight.
    if (!(p.scale > 0.0f) || !std::isfinite(p.scale)) {
        return invalid_argument("prefill_attention: scale " + std::to_string(p.scale) +
                                " (must be positive)");
    }
    return Status::ok_status();
}

}  // namespace

Status prefill_attention(const PrefillAttentionParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_params(p));
    if (p.num_seqs == 0 || p.max_q_len == 0) return Status::ok_status();
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t tiles_per_seq = prefill_tiles_per_seq(p.max_q_len, group);
    const int64_t num_ctas = int64_t{p.num_seqs} * tiles_per_seq;
    if (num_ctas > 0x7fffffff) {
        return unsupported("prefill_attention: " + std::to_string(num_ctas) +
                           " query tiles (grid x is at most 2^31 - 1)");
    }
    const dim3 grid(static_cast<uint32_t>(num_ctas), p.num_kv_heads);
    if (p.head_dim == 64) {
        prefill_attention_kernel<64><<<grid, kThreads, 0, stream>>>(p, tiles_per_seq);
    } else {
        prefill_attention_kernel<128><<<grid, kThreads, 0, stream>>>(p, tiles_per_seq);
    }
    return launch_status("prefill_attention");
}

}  // namespace se::cuda
