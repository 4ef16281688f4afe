// How paged KV entries sit in memory, and the per-sequence metadata an attention kernel reads.
//
// One layer's K (and likewise V) cache is an array of fixed-size blocks:
//   k_blocks : kv_dtype [num_blocks, block_size, num_kv_heads, head_dim]
// A sequence owns an ordered list of block ids (its block table). Entry j of the sequence lives
// in block block_table[j / block_size], row j % block_size.
//
//   entries:  [ 0 ............................ kv_len )
//                                   [ kv_len - q_len, kv_len )  <- written by this step
//   query row i of the step sees entries [0, kv_len - q_len + i]   (causal)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace se {

struct PagedKvLayout {
    DType dtype = DType::kF32;  // element type of the cache
    int32_t block_size = 16;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;

    int64_t entry_elems() const { return int64_t{num_kv_heads} * head_dim; }
    int64_t block_elems() const { return block_size * entry_elems(); }
};

// One layer's cache storage.
struct PagedKvCache {
    PagedKvLayout layout;
    void* k_blocks = nullptr;  // kv_dtype [num_blocks, block_size, num_kv_heads, head_dim]
    void* v_blocks = nullptr;  // kv_dtype [num_blocks, block_size, num_kv_heads, head_dim]
    int64_t num_blocks = 0;
};

// The part of one sequence a step reads.
struct PagedSeq {
    int32_t q_start = 0;  // first row of this sequence in the step's query tensor
    int32_t q_len = 0;    // rows of queries this step (0 is allowed: nothing to do)
    int32_t kv_len = 0;   // entries visible, including the q_len written this step
    std::span<const int32_t> block_table;  // i32 [ceil(kv_len / block_size)] block ids
};

// Dense paged payload: every listed entry of every sequence is read.
struct PagedKvRead {
    const PagedKvCache* cache = nullptr;
    std::span<const PagedSeq> seqs;
};

// One sequence of a gathered read: its query rows read the listed entries, causally over the
// list: the last q_len listed entries are the step's own, so query row i sees the first
// size - (q_len - 1 - i) of them. A decode row (q_len 1) sees every listed entry.
struct GatherSeq {
    int32_t q_start = 0;
    int32_t q_len = 0;
    std::span<const int32_t> block_table;  // the sequence's whole block table
    // Ascending entry indices: one list shared by every KV head, or one list per KV head
    // (lists[g] for KV head g). An empty list gives zero output rows.
    std::span<const std::vector<int32_t>> lists;
};

// Gathered paged payload: a chosen subset of each sequence's entries is read.
struct PagedKvGather {
    const PagedKvCache* cache = nullptr;
    std::span<const GatherSeq> seqs;
};

// Where a step's new K/V rows go: slot = block_id * block_size + row within the block.
struct KvWrite {
    std::span<const int64_t> slots;  // i64 [num_tokens]
};

// A layer's K/V rows of a step as a method keeps them when it keeps them as they are: token i's
// key and value (after RoPE) at write.slots[i] of *cache, and nothing else.
struct PlainKvStore {
    KvWrite write;
    const PagedKvCache* cache = nullptr;
};

}  // namespace se
