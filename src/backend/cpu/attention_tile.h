// One unit of attention work: a tile of query rows of one sequence, all query heads, against
// one range of the sequence's KV entries, with an online (flash-style) softmax over chunks of
// whole cache blocks. Each block is read once, contiguously, and serves every query vector of
// the tile (converted to f32 once when there are many); the query heads of a GQA group share
// their KV head's keys and values.
//
//   tile query vectors, KV-head major:  r = (g * num_rows + i) * group + t
//       (row i of the tile, query head g * group + t, KV head g)
//   row i sees entries [0, limit_i],  limit_i = kv_len - q_len + row_begin + i   (causal)
//   the tile reads entries [kv_begin, kv_end) of [0, limit_last]: all of them, or one partition
//
// The arithmetic of one query vector depends on its own entries only (see attention.h): KV
// partitions and chunks sit at absolute entry indices,
//
//   entries  0          P          2P         3P     limit_i
//            |----------|----------|----------|--------x--|    P = partition_entries(layout)
//            |C |C |C |C|C |C |C |C|   ...                     C = chunk_capacity(layout), C | P
//
// each partition runs an online softmax of its own over its chunks in order, and the partition
// states are folded in order by merge_partition. Entries past limit_i that a chunk holds for
// other rows of the tile count for nothing: score -inf, probability exactly 0, the running
// maximum and the sums unchanged.
#pragma once

#include <cstdint>

#include "backend/kv_layout.h"

namespace se::cpu {

struct AttentionTile {
    const float* q = nullptr;  // f32 [step rows, q_stride] the step's queries (unscaled)
    int64_t q_stride = 0;      // num_heads * head_dim
    const PagedKvCache* cache = nullptr;
    const PagedSeq* seq = nullptr;
    int32_t group = 1;  // query heads per KV head
    float scale = 1.0f;
    int32_t row_begin = 0;  // first query row of the tile, counted within the sequence
    int32_t num_rows = 0;
    int32_t kv_begin = 0;
    int32_t kv_end = 0;
};

// Softmax state of the tile's R = num_kv_heads * num_rows * group query vectors after a range
// of entries: o unnormalised (sum_j exp(s_j - m) v_j), m the running maximum score (-inf when
// no entry was visible), l the sum of exp(s_j - m).
struct TileState {
    float* o = nullptr;  // f32 [R, padded_head_dim]
    float* m = nullptr;  // f32 [R]
    float* l = nullptr;  // f32 [R]
};

// The state of num_vectors query vectors laid out from `base`: f32 [num_vectors, dp + 2].
inline TileState tile_state(float* base, int64_t num_vectors, int32_t dp) {
    return {.o = base, .m = base + num_vectors * dp, .l = base + num_vectors * (dp + 1)};
}

struct TileScratch {
    float* queries = nullptr;  // f32 [R, padded_head_dim]
    float* keys = nullptr;     // f32 [num_kv_heads, chunk_capacity, padded_head_dim]
    float* values = nullptr;   // f32 [num_kv_heads, chunk_capacity, padded_head_dim]
    float* scores = nullptr;   // f32 [num_rows * group, padded_block_size(chunk_capacity)]
    TileState partition;       // the state over one partition before it is folded in
};

inline int32_t padded_head_dim(int32_t head_dim) {
    return (head_dim + 7) / 8 * 8;
}
inline int32_t padded_block_size(int32_t block_size) {
    return (block_size + 7) / 8 * 8;
}

// Entries the tile processes per softmax step: a whole number of cache blocks.
int32_t chunk_capacity(const PagedKvLayout& layout);

// Entries per KV partition: a whole number of chunks.
int32_t partition_entries(const PagedKvLayout& layout);

// Runs the tile over its KV range, which starts at a partition boundary, and leaves the softmax
// state of its partitions, folded in order, in `state`.
void run_attention_tile(const AttentionTile& tile, const TileScratch& scratch,
                        const TileState& state);

// Folds query vector r's state over the next partition, `part`, into `into` (the state over the
// partitions before it): the one merge of partition states, in the tile and across split items.
void merge_partition(const TileState& into, const TileState& part, int64_t r, int32_t head_dim);

// out f32 [head_dim] = o / l of query vector r (zero when l is 0).
void write_normalised(const TileState& state, int64_t r, int32_t head_dim, float* out);

}  // namespace se::cpu
