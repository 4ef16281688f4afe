// Paged prefill attention on tensor cores (FlashAttention-2 style): a ragged batch of sequences,
// each with q_len query rows against its paged bf16 KV (kv_layout.h), causal, chunked prefill
// included (the last q_len of a sequence's kv_len entries are this step's own rows, already
// stored). Decode rows (q_len 1) may be mixed into the batch.
//
//   sequence s:  entries [0 ............ prefix) [prefix ........ kv_len)   prefix = kv_len - q_len
//                         cached by earlier steps  this step's q_len rows
//   query row i (0-based in s) sees entries [0, prefix + i]
//
// A CTA owns 128 packed rows (query token x head of one KV head's GQA group, prefill_tiles.h) and
// loops over KV tiles of 64 keys gathered from the paged cache into double-buffered shared
// memory; 4 warps own 32 rows each and keep the softmax state and the output accumulator in
// registers (prefill_attention.cu says why).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/activations.h"
#include "core/status.h"

namespace se::cuda {

inline constexpr int32_t kPrefillMaxGroup = 8;  // query heads per KV head

struct PrefillAttentionParams {
    const bf16* q = nullptr;         // bf16 [num_tokens, q_row_stride], head h at h * head_dim
    const bf16* k_blocks = nullptr;  // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    const bf16* v_blocks = nullptr;  // bf16 [num_blocks, block_size, num_kv_heads, head_dim]
    const int32_t* block_tables = nullptr;  // i32 [num_seqs, block_table_stride]
    const int32_t* q_start = nullptr;       // i32 [num_seqs], first row of the sequence in q, out
    const int32_t* q_len = nullptr;         // i32 [num_seqs], each in [0, max_q_len]
    const int32_t* kv_len = nullptr;        // i32 [num_seqs], each >= its q_len
    bf16* out = nullptr;             // bf16 [num_tokens, out_row_stride], head h at h * head_dim
    int64_t q_row_stride = 0;        // elements; >= num_heads * head_dim (a fused qkv row is wider)
    int64_t out_row_stride = 0;      // elements; >= num_heads * head_dim
    int32_t block_table_stride = 0;  // entries per row of block_tables
    int32_t num_seqs = 0;
    int32_t num_tokens = 0;  // rows of q and out (sum of q_len)
    int32_t max_q_len = 0;   // host-side bound on q_len: sizes the grid
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;  // divides num_heads, num_heads / num_kv_heads <= kPrefillMaxGroup
    int32_t head_dim = 0;      // 64 or 128
    int32_t block_size = 0;    // a power of two in [8, 256]
    int64_t num_blocks = 0;    // blocks of k_blocks and v_blocks (the wgmma kernel's TMA bounds)
    float scale = 1.0f;        // usually 1 / sqrt(head_dim)
};

// out = softmax(q k^T * scale) v, causal as above; query head h reads KV head
// h / (num_heads / num_kv_heads). Only the rows of the sequences are written; rows without a
// visible key (kv_len 0) are zero.
Status prefill_attention(const PrefillAttentionParams& p, cudaStream_t stream);

}  // namespace se::cuda
